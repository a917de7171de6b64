import { systemStatus } from "@/lib/system-status";

export const dynamic = "force-dynamic";

/** Liveness + readiness: answers once the database is reachable. */
export async function GET() {
  try {
    const status = await systemStatus();
    return Response.json({ ok: true, ...status });
  } catch {
    return Response.json({ ok: false }, { status: 503 });
  }
}
