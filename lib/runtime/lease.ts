import { Prisma } from "@/lib/db/prisma-types";
import { sqlOf, type Db } from "@/lib/db/sql";
import { RUN_STATE_COLUMNS, type RunStateRow } from "./run-state";

/** Raised when a worker finds its lease on a run was taken over (it was too slow or presumed dead). */
export class LeaseLostError extends Error {
  constructor(readonly runId: string) {
    super(`lease on run ${runId} was lost`);
    this.name = "LeaseLostError";
  }
}

/**
 * Claims a run for one worker with a conditional update: only a RUNNING run whose lease is free or expired.
 * A crashed worker's lease simply expires and the next claim wins. Not re-entrant: a second advance of the same
 * run by the same runtime (a request and the in-process worker share one) is refused too.
 * Returns the run's state columns (so the claimer need not read them again), or null when the run is held.
 */
export async function claimRun(db: Db, runId: string, owner: string, leaseMs: number): Promise<RunStateRow | null> {
  const [claimed] = await sqlOf(db).query<RunStateRow>(Prisma.sql`
    UPDATE "Run" SET "leaseOwner" = ${owner}, "leaseExpiresAt" = now() + make_interval(secs => ${leaseMs / 1000}::float8)
    WHERE id = ${runId} AND phase = 'RUNNING' AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
    RETURNING ${RUN_STATE_COLUMNS}`);
  return claimed ?? null;
}

/** Counter changes written together with a lease renewal (one statement, so they commit with the step). */
export interface RunCounters {
  turns?: number;
  inputTokens?: number;
  outputTokens?: number;
  costMicros?: number;
  activeMs?: number;
  maxTokensRetries?: number;
  pauseTurns?: number;
  corrections?: number;
  resetRequestAttempts?: boolean;
  lastStopReason?: string | null;
}

/** The SET list applying counter changes to a Run row (shared by the lease renewal and the run's end). */
export function countersSql(c: RunCounters): Prisma.Sql {
  return Prisma.sql`
      "updatedAt" = now(),
      "turnsUsed" = "turnsUsed" + ${c.turns ?? 0}::int,
      "inputTokens" = "inputTokens" + ${c.inputTokens ?? 0}::int,
      "outputTokens" = "outputTokens" + ${c.outputTokens ?? 0}::int,
      "costMicros" = "costMicros" + ${c.costMicros ?? 0}::int,
      "activeMs" = "activeMs" + ${Math.round(c.activeMs ?? 0)}::int,
      "maxTokensRetries" = "maxTokensRetries" + ${c.maxTokensRetries ?? 0}::int,
      "pauseTurns" = "pauseTurns" + ${c.pauseTurns ?? 0}::int,
      "corrections" = "corrections" + ${c.corrections ?? 0}::int,
      "requestAttempts" = CASE WHEN ${c.resetRequestAttempts ?? false}::boolean THEN 0 ELSE "requestAttempts" END,
      "lastStopReason" = CASE WHEN ${c.lastStopReason !== undefined}::boolean THEN ${c.lastStopReason ?? null}::text ELSE "lastStopReason" END`;
}

/** The lease-renewing UPDATE (with counter changes) as a fragment other statements can build on. */
export function renewLeaseSql(runId: string, owner: string, leaseMs: number, c: RunCounters = {}): Prisma.Sql {
  return Prisma.sql`
    UPDATE "Run" SET
      "leaseExpiresAt" = now() + make_interval(secs => ${leaseMs / 1000}::float8),
      ${countersSql(c)}
    WHERE id = ${runId} AND "leaseOwner" = ${owner}`;
}

/**
 * Fencing: every write of an advancing worker first renews its lease inside the same transaction (and bumps the
 * run's counters in the same statement). If another worker took the run over, the write is refused and nothing
 * of it commits.
 */
export async function assertLease(tx: Db, runId: string, owner: string, leaseMs: number, c: RunCounters = {}): Promise<void> {
  const renewed = await sqlOf(tx).execute(renewLeaseSql(runId, owner, leaseMs, c));
  if (renewed !== 1) throw new LeaseLostError(runId);
}

/**
 * A write fenced by the lease in ONE statement: `write` runs only if the lease renewal matched (it selects
 * FROM the renewal's CTE `lease`), so no transaction is needed. Throws LeaseLostError when nothing was written.
 */
export async function fencedWrite(db: Db, runId: string, owner: string, leaseMs: number, c: RunCounters, write: Prisma.Sql): Promise<void> {
  await fencedCtes(db, runId, owner, leaseMs, c, Prisma.sql`w AS (${write})`);
}

/**
 * Several writes fenced by the lease in ONE statement: `ctes` ("a AS (… FROM lease …), b AS (…)") run only if
 * the renewal matched. Returns the row of `select` (over those CTEs); throws LeaseLostError when nothing was written.
 */
export async function fencedCtes<T extends object>(db: Db, runId: string, owner: string, leaseMs: number, c: RunCounters, ctes: Prisma.Sql, select: Prisma.Sql = Prisma.sql`1 AS one`): Promise<T> {
  const [row] = await sqlOf(db).query<T & { fenced_ok: number }>(Prisma.sql`
    WITH lease AS (${renewLeaseSql(runId, owner, leaseMs, c)} RETURNING id), ${ctes}
    SELECT (SELECT count(*)::int FROM lease) AS fenced_ok, ${select}`);
  if (row?.fenced_ok !== 1) throw new LeaseLostError(runId);
  return row;
}

/** Lets go of a run (after parking, finishing or an error) so another worker may claim it at once. */
export async function releaseRun(db: Db, runId: string, owner: string): Promise<void> {
  await sqlOf(db).execute(Prisma.sql`UPDATE "Run" SET "leaseOwner" = NULL, "leaseExpiresAt" = NULL WHERE id = ${runId} AND "leaseOwner" = ${owner}`);
}
