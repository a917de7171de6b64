import type { RuntimeDeps } from "./deps";
import { advanceConversationFrom } from "./advance";
import { expireDueApprovals } from "@/lib/handoffs/decide";

/**
 * One pass of the background worker: expire approvals past their TTL, wake runs whose retry is due, and
 * advance every run that is RUNNING without a live lease (just approved, or abandoned by a crashed worker).
 * Any number of workers may run this at once; the lease decides who advances which run.
 */
export async function runWorkerOnce(deps: RuntimeDeps, limit = 20): Promise<{ advanced: number; expired: number }> {
  const expired = await expireDueApprovals(deps.db);
  await deps.db.$executeRaw`
    UPDATE "Run" SET phase = 'RUNNING', "nextAttemptAt" = NULL
    WHERE phase = 'WAITING_FOR_RETRY' AND "nextAttemptAt" <= now()`;
  const due = await deps.db.$queryRaw<Array<{ id: string }>>`
    SELECT id FROM "Run" WHERE phase = 'RUNNING' AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
    ORDER BY "updatedAt" ASC LIMIT ${limit}`;
  for (const { id } of due) await advanceConversationFrom(deps, id);
  return { advanced: due.length, expired: expired.length };
}

/** Polls until the signal aborts. Errors of one pass are logged; the next pass retries. */
export async function runWorker(deps: RuntimeDeps, opts: { signal?: AbortSignal; intervalMs?: number } = {}): Promise<void> {
  const interval = opts.intervalMs ?? 1000;
  while (!opts.signal?.aborted) {
    try {
      await runWorkerOnce(deps);
    } catch (err) {
      console.error("[worker] pass failed", err);
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, interval);
      opts.signal?.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }
}
