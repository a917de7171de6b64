import { logDatabaseEvent, noteDatabaseFailure, noteDatabaseReachable } from "@/lib/db/outage";
import { systemStatus } from "@/lib/system-status";

export const dynamic = "force-dynamic";

/** Liveness + readiness: 200 while the database answers, 503 while it does not (and 200 again by itself once it returns). */
export async function GET() {
  try {
    const status = await systemStatus();
    noteDatabaseReachable();
    return Response.json({ ok: true, ...status }, { headers: { "cache-control": "no-store" } });
  } catch (err) {
    const unreachable = noteDatabaseFailure(err, "health");
    if (!unreachable) logDatabaseEvent("error", "health check failed", { err });
    return Response.json(
      { ok: false, database: unreachable ? "unavailable" : "error" },
      { status: 503, headers: { "cache-control": "no-store" } },
    );
  }
}
