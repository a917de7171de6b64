import "server-only";
import { getPrisma } from "@/lib/db/client";
import { answeredWithin } from "@/lib/db/outage";
import { env } from "@/lib/env";

/**
 * What runs right now, for the landing page and health checks: which database and which model — nothing of any shop's
 * (both answer anyone, signed in or not: a count of waiting handoffs would let anyone watch the shops' queues). The
 * database must answer a query: with `answerWithinMs`, one that has not answered by then is a connectivity failure
 * ("not answering", lib/db/outage) rather than waited for; making the client (the process's first use of it) is not
 * counted.
 */
export async function systemStatus(opts: { answerWithinMs?: number } = {}) {
  const db = await getPrisma();
  const answered = db.$queryRaw`SELECT 1`;
  await (opts.answerWithinMs ? answeredWithin(answered, opts.answerWithinMs) : answered);
  return {
    database: env().DATABASE_URL ? "PostgreSQL (DATABASE_URL)" : "embedded PostgreSQL (.data/pg)",
    model: env().ANTHROPIC_API_KEY ? `Claude (${env().ANTHROPIC_MODEL})` : "offline model",
  };
}
