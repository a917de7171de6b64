// The background worker: expires approvals past their TTL, and advances runs that are due — just resumed, waiting
// for a retry whose time has come, or abandoned by a crashed worker (its lease ran out). Any number of workers, in
// any number of processes, share the queue: each pass claims a batch with FOR UPDATE SKIP LOCKED and advances its
// runs concurrently; a NOTIFY wakes it at once when a run becomes due, a timer when a retry or a lease comes due.
// Beside the runs it does the after-commit work (lib/runtime/after-commit): audit records sealed, webhooks sent.
import { storeOf } from "@/lib/db/kysely";
import { listen } from "@/lib/db/listener";
import { claimDueRuns, nextDueAt } from "@/lib/store/runs";
import { type AdvanceResult, advanceConversationFrom } from "./advance";
import type { RuntimeDeps } from "./deps";
import { expireDueApprovals } from "./resume";
import { runAfterCommitLoop, runAfterCommitOnce } from "./after-commit";
import { env } from "@/lib/env";
import { log } from "@/lib/log";
import { noteDatabaseFailure } from "@/lib/db/outage";

/** How many runs one worker advances at the same time. */
const defaultConcurrency = () => env().SUPPORT_WORKER_CONCURRENCY;

/** Claims up to `limit` due runs and starts advancing them; returns their promises. */
async function claimAndStart(deps: RuntimeDeps, limit: number): Promise<Array<Promise<AdvanceResult>>> {
  if (limit <= 0) return [];
  const rows = await claimDueRuns(storeOf(deps.db), deps.workerId, deps.leaseMs, limit);
  return rows.map((row) =>
    advanceConversationFrom(deps, row.id, { claimedAs: { workerId: `${deps.workerId}:${row.id}`, leaseMs: deps.leaseMs }, runRow: row }),
  );
}

/**
 * One pass: expire approvals past their TTL, then claim and advance up to `limit` due runs (concurrently), waiting
 * for them. Returns how many runs were advanced and approvals expired.
 */
export async function runWorkerOnce(deps: RuntimeDeps, limit = defaultConcurrency()): Promise<{ advanced: number; expired: number }> {
  const expired = await expireDueApprovals(deps);
  const started = await claimAndStart(deps, limit);
  const results = await Promise.allSettled(started);
  for (const r of results) if (r.status === "rejected") log.error({ err: r.reason }, "advancing a run failed");
  // Then what the runs committed: audit records sealed, webhooks sent. Its failure is logged, not the pass's.
  const afterCommit = await runAfterCommitOnce(deps).catch((err: unknown) => {
    if (!noteDatabaseFailure(err, "worker")) log.error({ err }, "after-commit pass failed");
    return null;
  });
  return { advanced: started.length, expired: expired.length, ...(afterCommit ?? {}) };
}

/**
 * Runs until the signal aborts. Keeps up to `concurrency` runs in flight; sleeps until a NOTIFY (a run became due),
 * the next retry or lease expiry, or `pollMs` at most. Errors of a pass are logged; the next pass retries.
 */
export async function runWorker(
  deps: RuntimeDeps,
  opts: { signal?: AbortSignal; intervalMs?: number; concurrency?: number } = {},
): Promise<void> {
  const concurrency = opts.concurrency ?? defaultConcurrency();
  const pollMs = opts.intervalMs ?? 5000;
  let inFlight = 0;
  let wake: (() => void) | null = null;
  const poke = () => {
    wake?.();
    wake = null;
  };
  const unlisten = deps.databaseUrl ? await listen(deps.databaseUrl, "support_runs", poke, poke).catch(() => null) : null;
  opts.signal?.addEventListener("abort", poke, { once: true });
  // Sealing audit records and sending webhooks run beside the runs, so a slow endpoint never holds up a turn.
  const afterCommit = runAfterCommitLoop(deps, { signal: opts.signal, intervalMs: Math.min(pollMs, 1000) });
  let lastExpiry = 0;
  try {
    while (!opts.signal?.aborted) {
      try {
        if (Date.now() - lastExpiry > 1000) {
          lastExpiry = Date.now();
          await expireDueApprovals(deps);
        }
        const started = await claimAndStart(deps, concurrency - inFlight);
        for (const p of started) {
          inFlight++;
          p.catch((err) => log.error({ err }, "advancing a run failed")).finally(() => {
            inFlight--;
            poke(); // room for another
          });
        }
        if (started.length && inFlight < concurrency) continue; // maybe more are due
      } catch (err) {
        if (!noteDatabaseFailure(err, "worker")) log.error({ err }, "worker pass failed"); // an outage is logged once
      }
      const due = await nextDueAt(storeOf(deps.db)).catch(() => null);
      const untilDue = due ? due.getTime() - Date.now() + 20 : pollMs;
      const wait = Math.max(20, Math.min(pollMs, untilDue));
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  } finally {
    unlisten?.();
    await afterCommit;
  }
}
