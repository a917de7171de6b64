// Runs: created with the customer text that starts them, claimed by one worker at a time (a lease), advanced,
// parked, resumed and ended. Phase changes are checked in ./phases; the ones a lease holder makes are written with
// its renewal (./lease).
import { sql } from "kysely";
import type { RunPhase, Store } from "@/lib/db/kysely";
import { addEvent } from "./events";
import { conversationSpendSql, shopSpendTodaySql } from "./model-calls";
import type { Lease } from "./lease";
import { assertRunTransition } from "./phases";
import type { Sql, Statement, WriteOptions } from "./statement";

/** The budgets a run has used and its caps. */
export interface RunCountersState {
  turnsUsed: number;
  maxTurns: number;
  inputTokens: number;
  outputTokens: number;
  tokenBudget: number;
  costMicros: number;
  activeMs: number;
  requestAttempts: number;
  maxTokensRetries: number;
  pauseTurns: number;
  corrections: number;
}

/** What the run has done (for the stop check): the tools whose effect is in the ledger, and how many calls acted. */
export interface RunDone {
  effects: string[];
  acted: number;
}

/** Model spend around the run (micro-USD), for the conversation's and the shop's daily budgets. */
export interface SpendState {
  conversationCostMicros: bigint | number;
  shopDayCostMicros: bigint | number;
}

/** The run as an advance works with it, read when it is claimed. */
export type RunStateRow = RunCountersState &
  RunDone &
  SpendState & { id: string; tenantId: string; conversationId: string; policyVersion: number; model: string; phase: RunPhase };

/**
 * `RunDone` as two columns of any statement: `runId` is the run's id (a value, or SQL such as "Run".id). Calls whose
 * outcome the same statement writes are not in its snapshot: name them in `settlingNow`, and the caller counts them.
 */
export function runDoneColumns(runId: string | Sql, settlingNow: string[] = []): Sql {
  return sql`
    (SELECT coalesce(array_agg(DISTINCT "toolName"), '{}') FROM "EffectLedger" WHERE "runId" = ${runId}) AS effects,
    (SELECT count(*)::int FROM "ToolCall" WHERE "runId" = ${runId} AND status = 'SUCCEEDED' AND name <> 'verify_customer'
       AND NOT (id = ANY(${settlingNow}::text[]))) AS acted`;
}

const STATE_COLUMNS = sql`"Run".id, "Run"."tenantId", "Run"."conversationId", "Run"."policyVersion", "Run".model, "Run".phase,
  "Run"."turnsUsed", "Run"."maxTurns", "Run"."inputTokens", "Run"."outputTokens", "Run"."tokenBudget", "Run"."costMicros",
  "Run"."activeMs", "Run"."requestAttempts", "Run"."maxTokensRetries", "Run"."pauseTurns", "Run".corrections,
  ${runDoneColumns(sql`"Run".id`)},
  ${conversationSpendSql(sql`"Run"."conversationId"`)} AS "conversationCostMicros",
  ${shopSpendTodaySql(sql`"Run"."tenantId"`)} AS "shopDayCostMicros"`;

/** The final SELECT list of a statement that also returns a run's state (as read by the statement's snapshot). */
export function runStateOf(runId: string): Sql {
  return sql`${STATE_COLUMNS} FROM "Run" WHERE "Run".id = ${runId}`;
}

export interface NewRun {
  id: string;
  tenantId: string;
  conversationId: string;
  policyVersion: number;
  maxTurns: number | Sql;
  tokenBudget: number | Sql;
  promptVersion: string;
  toolsVersion: string;
  model: string;
  /** the caller takes the lease at creation, so it advances the run itself (no worker can take it meanwhile) */
  lease?: Lease | null;
}

/** Adds the INSERT of a new run (and its `run.started` event) to a statement; conditional like any write. */
export function addRun(s: Statement, name: string, r: NewRun, opts: WriteOptions = {}): void {
  s.insert(
    name,
    "Run",
    {
      id: r.id,
      tenantId: r.tenantId,
      conversationId: r.conversationId,
      phase: sql`'RUNNING'::"RunPhase"`,
      maxTurns: r.maxTurns,
      tokenBudget: r.tokenBudget,
      policyVersion: r.policyVersion,
      promptVersion: r.promptVersion,
      toolsVersion: r.toolsVersion,
      model: r.model,
      leaseOwner: r.lease?.owner ?? null,
      leaseExpiresAt: r.lease ? sql`now() + make_interval(secs => ${r.lease.ms / 1000}::float8)` : null,
      updatedAt: sql`now()`,
    },
    { ...opts, returning: sql`id` },
  );
  addEvent(
    s,
    `${name}_ev`,
    {
      tenantId: r.tenantId,
      conversationId: r.conversationId,
      type: "run.started",
      data: sql`jsonb_build_object('runId', ${sql.raw(name)}.id)`,
    },
    { from: [name] },
  );
}

/**
 * Claims one run for `lease.owner`: only a RUNNING run whose lease is free or expired (a crashed worker's lease
 * simply expires). Not re-entrant. Returns the run's state, or null when someone else holds it.
 */
export async function claimRun(db: Store, lease: Lease): Promise<RunStateRow | null> {
  const rows = await sql<RunStateRow>`
    UPDATE "Run" SET "leaseOwner" = ${lease.owner}, "leaseExpiresAt" = now() + make_interval(secs => ${lease.ms / 1000}::float8), "updatedAt" = now()
    WHERE id = ${lease.runId} AND phase = 'RUNNING' AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now())
    RETURNING ${STATE_COLUMNS}`.execute(db);
  return rows.rows[0] ?? null;
}

/**
 * A worker's batch: up to `limit` runs that are due — RUNNING without a live lease (just resumed, or abandoned by a
 * crashed worker) or waiting for a retry whose time has come — claimed in ONE statement. Rows another worker is
 * claiming right now are skipped (FOR UPDATE SKIP LOCKED), so any number of workers share the queue without waiting
 * on each other. Each run gets its own lease owner (`${ownerPrefix}:${runId}`; the caller makes the prefix fresh for each claim).
 */
export async function claimDueRuns(db: Store, ownerPrefix: string, leaseMs: number, limit: number): Promise<RunStateRow[]> {
  assertRunTransition("WAITING_FOR_RETRY", "RUNNING");
  const rows = await sql<RunStateRow>`
    WITH due AS (
      SELECT id FROM "Run"
      WHERE (phase = 'RUNNING' AND ("leaseExpiresAt" IS NULL OR "leaseExpiresAt" < now()))
         OR (phase = 'WAITING_FOR_RETRY' AND "nextAttemptAt" <= now())
      ORDER BY "updatedAt" LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    )
    UPDATE "Run" SET phase = 'RUNNING', "nextAttemptAt" = NULL, "leaseOwner" = ${ownerPrefix} || ':' || "Run".id,
           "leaseExpiresAt" = now() + make_interval(secs => ${leaseMs / 1000}::float8), "updatedAt" = now()
    FROM due WHERE "Run".id = due.id
    RETURNING ${STATE_COLUMNS}`.execute(db);
  return rows.rows;
}

/** The run's state (an advance that took the lease at creation or resume reads it here). */
export async function readRunState(db: Store, runId: string): Promise<RunStateRow | null> {
  const rows = await sql<RunStateRow>`SELECT ${STATE_COLUMNS} FROM "Run" WHERE "Run".id = ${runId}`.execute(db);
  return rows.rows[0] ?? null;
}

/** Lets go of a run (after an error) so another worker may claim it at once. */
export async function releaseRun(db: Store, lease: Lease): Promise<void> {
  await db
    .updateTable("Run")
    .set({ leaseOwner: null, leaseExpiresAt: null })
    .where("id", "=", lease.runId)
    .where("leaseOwner", "=", lease.owner)
    .execute();
}

/** The run's phase now. */
export async function runPhase(db: Store, runId: string): Promise<RunPhase | null> {
  const row = await db.selectFrom("Run").select("phase").where("id", "=", runId).executeTakeFirst();
  return row?.phase ?? null;
}

/**
 * What a worker deciding how long to sleep needs, in one statement: when the next run is due (the earliest retry or
 * lease end, or now when one is runnable), and when the next pending approval expires (the first entry of a partial
 * index, however many handoffs there are) — but for `skipApprovals`, whose failed expiry waits for its retry.
 */
export async function nextDueAt(
  db: Store,
  opts: { skipApprovals?: readonly string[] } = {},
): Promise<{ run: Date | null; approvalExpiry: Date | null }> {
  const skip = opts.skipApprovals?.length ? sql`AND id <> ALL(${[...opts.skipApprovals]}::text[])` : sql``;
  const row = await sql<{ run: Date | null; approvalExpiry: Date | null }>`
    SELECT least(
      (SELECT min("nextAttemptAt") FROM "Run" WHERE phase = 'WAITING_FOR_RETRY'),
      (SELECT min(coalesce("leaseExpiresAt", now())) FROM "Run" WHERE phase = 'RUNNING')
    ) AS run,
    (SELECT min("expiresAt") FROM "Handoff" WHERE kind = 'APPROVAL' AND status = 'PENDING' ${skip}) AS "approvalExpiry"`.execute(db);
  return { run: row.rows[0]?.run ?? null, approvalExpiry: row.rows[0]?.approvalExpiry ?? null };
}
