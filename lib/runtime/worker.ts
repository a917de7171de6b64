// The background worker: expires approvals past their TTL, and advances runs that are due — just resumed, waiting
// for a retry whose time has come, or abandoned by a crashed worker (its lease ran out). Any number of workers, in
// any number of processes, share the queue: each pass claims a batch with FOR UPDATE SKIP LOCKED and advances its
// runs concurrently; a NOTIFY wakes it at once when a run becomes due, a timer when a retry, a lease or an approval
// comes due (a run that starts waiting for a retry or an approval NOTIFYs too, so a sleeping worker sets its timer
// by it). At rest it asks the database nothing but a safety net's look every `idleMs`.
// Beside the runs it does the after-commit work (lib/runtime/after-commit): audit records sealed, webhooks sent.
import { storeOf } from "@/lib/db/kysely";
import { listen } from "@/lib/db/listener";
import { claimDueRuns, nextDueAt } from "@/lib/store/runs";
import { type AdvanceResult, advanceConversationFrom, claimFor } from "./advance";
import type { RuntimeDeps } from "./deps";
import { expireDueApprovals, expiryRetries } from "./resume";
import { runAfterCommitLoop, runAfterCommitOnce } from "./after-commit";
import { env } from "@/lib/env";
import { log } from "@/lib/log";
import { noteDatabaseFailure } from "@/lib/db/outage";
import { sleep } from "@/lib/sleep";

/** Approvals past their TTL are looked for once a second at most: a pass collects whatever came due meanwhile. (One
 * whose expiry failed waits for its own retry, further off each time: lib/backoff.) */
const EXPIRY_PASS_MS = 1000;

/** How many runs one worker advances at the same time. */
const defaultConcurrency = () => env().SUPPORT_WORKER_CONCURRENCY;

/** Claims up to `limit` due runs and starts advancing them; returns their promises. */
async function claimAndStart(deps: RuntimeDeps, limit: number): Promise<Array<Promise<AdvanceResult>>> {
  if (limit <= 0) return [];
  // A fresh identity for every claim: when this worker takes over a run whose lease ran out under its own earlier
  // advance (a heartbeat that did not land), that advance no longer passes the fence.
  const prefix = claimFor(deps).workerId;
  const rows = await claimDueRuns(storeOf(deps.db), prefix, deps.leaseMs, limit);
  return rows.map((row) =>
    advanceConversationFrom(deps, row.id, { claimedAs: { workerId: `${prefix}:${row.id}`, leaseMs: deps.leaseMs }, runRow: row }),
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
 * Runs until the signal aborts. Keeps up to `concurrency` runs in flight; sleeps until a NOTIFY (a run became due or
 * began to wait), the next retry, lease end or approval expiry, or `idleMs` at most (`intervalMs` when it cannot
 * listen, or while every slot is busy). Errors of a pass are logged; the next pass retries. Once aborted it claims
 * nothing more and lets the runs in flight finish, for `drainMs` at most (a run still going then is picked up by
 * another worker when its lease runs out, as after a crash).
 */
export async function runWorker(
  deps: RuntimeDeps,
  opts: { signal?: AbortSignal; intervalMs?: number; idleMs?: number; concurrency?: number; drainMs?: number } = {},
): Promise<void> {
  const concurrency = opts.concurrency ?? defaultConcurrency();
  const pollMs = opts.intervalMs ?? 5000;
  const drainMs = opts.drainMs ?? 10_000;
  const running = new Set<Promise<unknown>>();
  let inFlight = 0;
  let wake: (() => void) | null = null;
  // A poke that comes while the loop is not asleep (claiming, or reading what is due) is kept: the loop does not
  // sleep then, or a run that became due meanwhile would wait for the poll interval.
  let poked = false;
  const poke = () => {
    poked = true;
    wake?.();
    wake = null;
  };
  const unlisten = deps.databaseUrl ? await listen(deps.databaseUrl, "support_runs", poke, poke).catch(() => null) : null;
  // Listening, whatever becomes due either notifies or is a time the loop reads before it sleeps (a notification
  // missed while the connection was down is made up for by the poke of its reconnect): the longest sleep is a safety
  // net only. Without a listener, the loop polls.
  const restMs = unlisten ? Math.max(pollMs, opts.idleMs ?? 30_000) : pollMs;
  opts.signal?.addEventListener("abort", poke, { once: true });
  // Sealing audit records and sending webhooks run beside the runs, so a slow endpoint never holds up a turn.
  const afterCommit = runAfterCommitLoop(deps, { signal: opts.signal, intervalMs: Math.min(pollMs, 1000) });
  let lastExpiry = 0;
  try {
    while (!opts.signal?.aborted) {
      poked = false;
      let failed = false;
      try {
        if (Date.now() - lastExpiry >= EXPIRY_PASS_MS) {
          lastExpiry = Date.now();
          await expireDueApprovals(deps);
        }
        const started = await claimAndStart(deps, concurrency - inFlight);
        for (const p of started) {
          inFlight++;
          const settled = p
            .catch((err) => log.error({ err }, "advancing a run failed"))
            .finally(() => {
              inFlight--;
              running.delete(settled);
              poke(); // room for another
            });
          running.add(settled);
        }
        if (started.length && inFlight < concurrency) continue; // maybe more are due
      } catch (err) {
        if (!noteDatabaseFailure(err, "worker")) log.error({ err }, "worker pass failed"); // an outage is logged once
        failed = true;
      }
      // Every slot busy: nothing can be claimed until one frees (its end pokes the loop), however much is due; the
      // loop does not read what is due then, and looks again within the poll interval for approvals to expire. After
      // a failed pass or read it also looks again within the poll interval.
      const saturated = inFlight >= concurrency;
      const due = saturated
        ? null
        : await nextDueAt(storeOf(deps.db), { skipApprovals: expiryRetries.waiting() }).catch(() => {
            failed = true;
            return null;
          });
      const now = Date.now();
      const never = Number.POSITIVE_INFINITY;
      const untilRun = due?.run ? due.run.getTime() - now + 20 : never;
      // The next approval to expire, or the next retry of one whose expiry failed, whichever comes first.
      const expiryAt = Math.min(due?.approvalExpiry?.getTime() ?? never, expiryRetries.nextRetryAt(now)?.getTime() ?? never);
      const untilExpiry = Number.isFinite(expiryAt) ? Math.max(expiryAt + 20, lastExpiry + EXPIRY_PASS_MS) - now : never;
      const wait = Math.max(20, Math.min(saturated || failed ? pollMs : restMs, untilRun, untilExpiry));
      if (poked) continue;
      await sleep(wait, undefined, (stop) => {
        wake = stop;
      });
    }
  } finally {
    if (running.size) {
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([
        Promise.allSettled([...running]).then(() => true),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), drainMs))),
      ]);
      clearTimeout(timer);
      if (!drained)
        log.warn({ runs: running.size }, "stopping with runs still in flight; another worker takes them over when their leases run out");
    }
    unlisten?.();
    await afterCommit;
  }
}
