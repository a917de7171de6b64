// Things that failed for a reason of their own — an approval whose expiry fails, a shop whose audit records cannot be
// sealed, a webhook event that cannot be fanned out (a row a bug or a later constraint left unwritable) — and when
// each may be tried again. Such an item must neither hold up the rest of its pass (the other approvals, shops or
// events, the work after it, would wait behind it for ever) nor be tried again at every pass: its tries space out,
// 2 s, 4 s, … up to 5 minutes, and a pass's failures are logged one line per kind. Kept in the process: after a
// restart an item gets a first try again.

const FIRST_RETRY_MS = 2000;
const LONGEST_RETRY_MS = 5 * 60_000;
/** Past this many items in backoff the oldest entries are forgotten (they get a try sooner, nothing worse). */
const MOST_REMEMBERED = 1000;

/**
 * The delay before retry number `attempt` (1 = after the first failure): `baseMs`, doubled at each failure, capped at
 * `capMs`. Every backoff of the product grows this way; each adds its own jitter (or none) on top.
 */
export function doublingDelayMs(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
}

interface Failing {
  failures: number;
  retryAt: number;
}

export class KeyedBackoff {
  private readonly failing = new Map<string, Failing>();

  /** Notes a failed try; returns how long until the next. */
  failed(key: string, now = Date.now()): { failures: number; retryInMs: number } {
    const failures = (this.failing.get(key)?.failures ?? 0) + 1;
    const retryInMs = doublingDelayMs(failures, FIRST_RETRY_MS, LONGEST_RETRY_MS);
    this.failing.delete(key); // re-inserted last: the map stays in order of the latest failure
    this.failing.set(key, { failures, retryAt: now + retryInMs });
    if (this.failing.size > MOST_REMEMBERED) this.failing.delete(this.failing.keys().next().value!);
    return { failures, retryInMs };
  }

  /** The item succeeded, or needs nothing any more. */
  settled(key: string): void {
    this.failing.delete(key);
  }

  /** The items not to try now: those whose retry is still to come. */
  waiting(now = Date.now()): string[] {
    return [...this.failing].filter(([, f]) => f.retryAt > now).map(([id]) => id);
  }

  /** Every item noted as failing, whether or not its retry has come. */
  failingKeys(): string[] {
    return [...this.failing.keys()];
  }

  /** The earliest retry still to come (a sleeping worker's timer), or null. */
  nextRetryAt(now = Date.now()): Date | null {
    let next = Number.POSITIVE_INFINITY;
    for (const f of this.failing.values()) if (f.retryAt > now && f.retryAt < next) next = f.retryAt;
    return Number.isFinite(next) ? new Date(next) : null;
  }

  /** Forgets items whose retry has come but which are no longer due (settled elsewhere: decided, sealed). */
  forgetAllBut(dueKeys: ReadonlySet<string>, now = Date.now()): void {
    for (const [key, f] of this.failing) if (f.retryAt <= now && !dueKeys.has(key)) this.failing.delete(key);
  }
}

/**
 * The kind of a failure, for grouping: its message with what names one row masked — ids (UUIDs, cuids, the model's
 * tool_use ids, long hex), quoted values ('…') and long numbers — so the same failure on many rows is one kind, where a
 * constraint's name (in double quotes) or a type's size still tells two kinds apart.
 */
export function failureKind(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, "<id>")
    .replace(/\b(?:c(?=[a-z0-9]*\d)[a-z0-9]{20,}|toolu_\w+|[0-9a-f]{16,})\b/gi, "<id>")
    .replace(/'(?:[^']|'')*'/g, "'…'")
    .replace(/\b\d{5,}\b/g, "<n>");
}

/**
 * The failures of one pass over such items, logged one line per kind (`failureKind`: the error's message, less the
 * row it names) naming the items it concerns: when many fail alike (a bug, a constraint added later), one line with
 * their count and ids, not a line and a stack per item. `Item` holds what a line says of one item: its id (under
 * `idKey`), shop, failures, next try.
 */
export class FailuresOfAPass<Item extends Record<string, unknown>> {
  private readonly byKind = new Map<string, { err: unknown; items: Item[] }>();

  constructor(
    private readonly idKey: keyof Item & string,
    private readonly say: { one: string; many: (n: number) => string },
  ) {}

  add(err: unknown, item: Item): void {
    const kind = failureKind(err);
    const entry = this.byKind.get(kind) ?? { err, items: [] };
    entry.items.push(item);
    this.byKind.set(kind, entry);
  }

  /** Writes the lines (through `write`: the caller's logger). */
  log(write: (fields: Record<string, unknown>, msg: string) => void): void {
    for (const { err, items } of this.byKind.values()) {
      const ids = items.slice(0, 20).map((i) => i[this.idKey]);
      if (items.length === 1) write({ err, ...items[0] }, this.say.one);
      else write({ err, ...items[0], count: items.length, [`${this.idKey}s`]: ids }, this.say.many(items.length));
    }
  }
}

// On globalThis: Next.js may evaluate a module more than once in one process; a backoff is the process's.
const g = globalThis as typeof globalThis & { __supportBackoffs?: Map<string, KeyedBackoff> };

/** The process's backoff named `name` (one per kind of item). */
export function processBackoff(name: string): KeyedBackoff {
  const all = (g.__supportBackoffs ??= new Map());
  let b = all.get(name);
  if (!b) all.set(name, (b = new KeyedBackoff()));
  return b;
}
