import "server-only";
import { getPrisma } from "@/lib/db/client";
import { answeredWithin } from "@/lib/db/outage";
import { env } from "@/lib/env";

/**
 * What runs right now, for the landing page and health checks. With `answerWithinMs`, a database that has not
 * answered its queries by then is a connectivity failure ("not answering", lib/db/outage) rather than waited for;
 * making the client (the process's first use of it) is not counted.
 */
export async function systemStatus(opts: { answerWithinMs?: number } = {}) {
  const db = await getPrisma();
  const counts = Promise.all([db.tenant.count(), db.handoff.count({ where: { status: "PENDING" } })]);
  const [tenants, pending] = opts.answerWithinMs ? await answeredWithin(counts, opts.answerWithinMs) : await counts;
  return {
    database: env().DATABASE_URL ? "PostgreSQL (DATABASE_URL)" : "embedded PostgreSQL (.data/pg)",
    model: env().ANTHROPIC_API_KEY ? `Claude (${env().ANTHROPIC_MODEL})` : "offline model",
    tenants,
    pendingHandoffs: pending,
  };
}
