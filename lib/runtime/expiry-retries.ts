// Approvals whose expiry failed, and when each may be tried again. An expiry that fails for a reason of its own (a
// row a bug or a later constraint left unwritable) must neither stop the pass — the other approvals, and the runs the
// worker claims after it, would wait behind it for ever — nor be tried again every second. It stays pending (a
// reviewer still sees it, nothing is lost), its failure is logged at each try, and the tries space out: 2 s, 4 s, …
// up to 5 minutes. Kept in the process: after a restart an approval gets a first try again.

const FIRST_RETRY_MS = 2000;
const LONGEST_RETRY_MS = 5 * 60_000;
/** Past this many approvals in backoff the oldest entries are forgotten (they get a try sooner, nothing worse). */
const MOST_REMEMBERED = 1000;

interface Failing {
  failures: number;
  retryAt: number;
}

export class ExpiryRetries {
  private readonly failing = new Map<string, Failing>();

  /** Notes a failed try; returns how long until the next. */
  failed(handoffId: string, now = Date.now()): { failures: number; retryInMs: number } {
    const failures = (this.failing.get(handoffId)?.failures ?? 0) + 1;
    const retryInMs = Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** (failures - 1));
    this.failing.delete(handoffId); // re-inserted last: the map stays in order of the latest failure
    this.failing.set(handoffId, { failures, retryAt: now + retryInMs });
    if (this.failing.size > MOST_REMEMBERED) this.failing.delete(this.failing.keys().next().value!);
    return { failures, retryInMs };
  }

  /** The approval expired, or needs no expiry any more (decided meanwhile). */
  settled(handoffId: string): void {
    this.failing.delete(handoffId);
  }

  /** The approvals not to try now: those whose retry is still to come. */
  waiting(now = Date.now()): string[] {
    return [...this.failing].filter(([, f]) => f.retryAt > now).map(([id]) => id);
  }

  /** The earliest retry still to come (a sleeping worker's timer), or null. */
  nextRetryAt(now = Date.now()): Date | null {
    let next = Number.POSITIVE_INFINITY;
    for (const f of this.failing.values()) if (f.retryAt > now && f.retryAt < next) next = f.retryAt;
    return Number.isFinite(next) ? new Date(next) : null;
  }

  /** Forgets approvals whose retry has come but which are no longer due (decided or expired elsewhere). */
  forgetAllBut(dueIds: ReadonlySet<string>, now = Date.now()): void {
    for (const [id, f] of this.failing) if (f.retryAt <= now && !dueIds.has(id)) this.failing.delete(id);
  }
}

// On globalThis: Next.js may evaluate this module more than once in one process; the backoff is the process's.
const g = globalThis as typeof globalThis & { __supportExpiryRetries?: ExpiryRetries };
export const expiryRetries: ExpiryRetries = (g.__supportExpiryRetries ??= new ExpiryRetries());
