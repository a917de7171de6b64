// Fencing. A run is advanced by one worker at a time, the holder of its lease (an owner id and an expiry on the
// Run row). Every write of an advancing worker renews the lease in the same statement or transaction, so a
// worker that lost the lease (it was too slow, or presumed dead and taken over) writes nothing at all.
//   fenced(lease, …)  → one statement whose first CTE renews the lease; every write of it reads FROM that CTE
//   withLease(db, …)  → a transaction whose first statement renews (and row-locks) the lease
import { sql, type Transaction } from "kysely";
import { type DB, type RunPhase, type Store, sendTogether } from "@/lib/db/kysely";
import { assertRunTransition } from "./phases";
import { type Sql, Statement } from "./statement";

/** A claim on a run: who holds it and for how long each renewal lasts. */
export interface Lease {
  runId: string;
  owner: string;
  ms: number;
}

/** Raised when a worker finds its lease on a run was taken over; nothing of the refused write happened. */
export class LeaseLostError extends Error {
  constructor(readonly runId: string) {
    super(`lease on run ${runId} was lost`);
    this.name = "LeaseLostError";
  }
}

/** Counter changes written with a lease renewal (same statement, so they commit with the step). */
export interface RunCounters {
  turns?: number;
  inputTokens?: number;
  outputTokens?: number;
  costMicros?: number;
  activeMs?: number;
  maxTokensRetries?: number;
  pauseTurns?: number;
  corrections?: number;
  /** a failed model request (attempt counted) */
  requestAttempts?: number;
  resetRequestAttempts?: boolean;
  lastStopReason?: string | null;
}

/** A change of phase written with the renewal: RUNNING → `to` (checked in lib/store/phases). */
export interface RunTransition {
  to: RunPhase;
  /** let go of the lease (the run waits for a person or a retry, or it ended) */
  release: boolean;
  nextAttemptAt?: Date | null;
  /** why it ended (SQL when the statement decides it) */
  outcome?: string | Sql;
}

export function countersSql(c: RunCounters): Sql {
  const parts: Sql[] = [sql`"updatedAt" = now()`];
  const add = (col: string, n: number | undefined) => {
    if (n) parts.push(sql`${sql.ref(col)} = ${sql.ref(col)} + ${Math.round(n)}::int`);
  };
  add("turnsUsed", c.turns);
  add("inputTokens", c.inputTokens);
  add("outputTokens", c.outputTokens);
  add("costMicros", c.costMicros);
  add("activeMs", c.activeMs);
  add("maxTokensRetries", c.maxTokensRetries);
  add("pauseTurns", c.pauseTurns);
  add("corrections", c.corrections);
  if (c.resetRequestAttempts) parts.push(sql`"requestAttempts" = 0`);
  else add("requestAttempts", c.requestAttempts);
  if (c.lastStopReason !== undefined) parts.push(sql`"lastStopReason" = ${c.lastStopReason}`);
  return sql.join(parts);
}

function transitionSql(t: RunTransition | undefined): { set: Sql; where: Sql } {
  if (!t) return { set: sql``, where: sql`` };
  assertRunTransition("RUNNING", t.to);
  const ended = t.to === "COMPLETED" || t.to === "ESCALATED" || t.to === "DEAD_LETTER";
  return {
    set: sql`, phase = ${t.to}::"RunPhase", "nextAttemptAt" = ${t.nextAttemptAt ?? null}::timestamp(3)${
      t.release ? sql`, "leaseOwner" = NULL, "leaseExpiresAt" = NULL` : sql``
    }${ended ? sql`, "endedAt" = now(), outcome = ${t.outcome ?? t.to}` : sql``}`,
    where: sql` AND phase = 'RUNNING'`,
  };
}

/**
 * The renewal: the lease extended (or released by a transition), the counters bumped, in one UPDATE. `alsoRead`
 * (select-list items) is returned with it, read under the run's row lock — saving a round trip before a transaction.
 */
function renewalSql(lease: Lease, counters: RunCounters, transition?: RunTransition, alsoRead?: Sql): Sql {
  const t = transitionSql(transition);
  const keep = transition?.release ? sql`` : sql`, "leaseExpiresAt" = now() + make_interval(secs => ${lease.ms / 1000}::float8)`;
  const returning = alsoRead ? sql`id, ${alsoRead}` : sql`id`;
  return sql`UPDATE "Run" SET ${countersSql(counters)}${keep}${t.set} WHERE id = ${lease.runId} AND "leaseOwner" = ${lease.owner}${t.where} RETURNING ${returning}`;
}

/** A statement fenced by a lease: made only by `fenced()`; every write in it reads FROM `lease`. */
export class FencedStatement extends Statement {
  constructor(
    readonly lease: Lease,
    counters: RunCounters,
    transition?: RunTransition,
  ) {
    super("lease");
    this.first("lease", renewalSql(lease, counters, transition));
  }

  /** Runs it; throws LeaseLostError (nothing written) when the lease was lost. Returns the `select` row. */
  override async run<R>(db: Store, select: Sql = sql`1 AS one`): Promise<R | null> {
    const [row] = await this.rows<R>(db, select);
    return row ?? null;
  }

  override async rows<R>(db: Store, select: Sql = sql`1 AS one`): Promise<R[]> {
    const rows = await super.rows<R & { fenced_ok: number }>(
      db,
      sql`l.n AS fenced_ok, q.* FROM (SELECT count(*)::int AS n FROM lease) l LEFT JOIN LATERAL (SELECT ${select}) q ON true`,
    );
    if (rows[0]?.fenced_ok !== 1) throw new LeaseLostError(this.lease.runId);
    return rows.map(({ fenced_ok: _ok, ...rest }) => rest as R);
  }

  /**
   * Runs it as the last statement of a fenced transaction, with COMMIT right behind it (one round trip for both) —
   * only on a `FencedTx`, whose first statement renewed the lease and row-locked the run, so nobody can have taken
   * it since. Should the renewal here match no row all the same, the statement fails (its guard column cannot be
   * cast), PostgreSQL answers the COMMIT with ROLLBACK and nothing of the transaction stands: LeaseLostError.
   */
  override async runThenCommit<R>(tx: FencedTx, select: Sql = sql`1 AS one`): Promise<R | null> {
    try {
      const [answer] = await sendTogether<R>(
        tx,
        [
          this.build(
            sql`(CASE WHEN l.n = 1 THEN NULL ELSE ${sql.lit(LEASE_LOST)} END)::int AS lease_guard, q.* FROM (SELECT count(*)::int AS n FROM lease) l LEFT JOIN LATERAL (SELECT ${select}) q ON true`,
          ),
        ],
        { commit: true },
      );
      const first = answer!.rows[0] as (R & { lease_guard: null }) | undefined;
      if (!first) return null;
      const { lease_guard: _guard, ...row } = first;
      return row as R;
    } catch (err) {
      if ((err as { code?: string }).code === "22P02" && String((err as Error).message).includes(LEASE_LOST)) {
        throw new LeaseLostError(this.lease.runId);
      }
      throw err;
    }
  }
}

/** What a fenced statement that commits casts to int when its lease was lost (so the statement, and the commit, fail). */
const LEASE_LOST = "lease lost";

/** A statement whose writes happen only while `lease` holds; `transition` changes the run's phase with it. */
export function fenced(lease: Lease, opts: { counters?: RunCounters; transition?: RunTransition } = {}): FencedStatement {
  return new FencedStatement(lease, opts.counters ?? {}, opts.transition);
}

declare const fencedTx: unique symbol;
/** A transaction whose first statement renewed (and so row-locked) the lease: only `withLease` makes one. */
export type FencedTx = Transaction<DB> & { readonly [fencedTx]: true };

/**
 * Runs `fn` in a transaction that first renews the lease (locking the run's row until commit, so nobody can take
 * it over meanwhile). Lost lease → LeaseLostError and nothing happens. For steps that must read under a lock
 * before they write (a side effect checks what is still refundable, then acts). `alsoRead`: select-list items read
 * by the renewal itself, handed to `fn` (what the step checks first, without a round trip of its own).
 */
export async function withLease<T, R extends object = Record<string, never>>(
  db: Store,
  lease: Lease,
  counters: RunCounters,
  fn: (tx: FencedTx, read: R) => Promise<T>,
  alsoRead?: Sql,
): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const renewed = await renewalSql(lease, counters, undefined, alsoRead).execute(trx);
    const row = renewed.rows[0] as ({ id: string } & R) | undefined;
    if (!row) throw new LeaseLostError(lease.runId);
    const { id: _id, ...read } = row;
    return fn(trx as FencedTx, read as unknown as R);
  });
}
