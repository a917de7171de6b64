import { logDatabaseEvent, noteDatabaseFailure, noteDatabaseReachable } from "@/lib/db/outage";
import { systemStatus } from "@/lib/system-status";

export const dynamic = "force-dynamic";

/** A database that has not answered within this is reported unavailable, not waited for. Under the pool's wait for a
 * new connection (5 s, lib/db/sql): a frozen database is told as "not answering" whichever connection the check got. */
const ANSWER_WITHIN_MS = 4000;

/**
 * Liveness + readiness: 200 while the database answers, 503 while it does not (and 200 again by itself once it
 * returns) — also when it stops answering without refusing anything, within ANSWER_WITHIN_MS.
 */
export async function GET() {
  try {
    const status = await systemStatus({ answerWithinMs: ANSWER_WITHIN_MS });
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
