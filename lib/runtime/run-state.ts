import { Prisma } from "@/lib/db/prisma-types";
import { sqlOf, type Db } from "@/lib/db/sql";
import type { Policy } from "@/lib/policy/policy";
import { loadPolicy } from "./policy";
import type { RunRef } from "./tool-gating";
import { noteCommitted, type TranscriptRow } from "./transcript";
import type { ToolCallRow } from "./tool-call-rows";

/** The budgets a run has used and its caps: read once per advance, kept current in memory while the lease is held. */
export interface RunCountersState {
  turnsUsed: number;
  maxTurns: number;
  inputTokens: number;
  outputTokens: number;
  tokenBudget: number;
  activeMs: number;
  requestAttempts: number;
  maxTokensRetries: number;
  pauseTurns: number;
  corrections: number;
}

/**
 * What one advance of a run works with. Rebuilt from the database each time a worker claims the run; while it
 * holds the lease nobody else writes the run, so the copy stays true and saves a read per step.
 */
export interface RunState {
  ref: RunRef;
  policy: Policy;
  model: string;
  counters: RunCountersState;
  /**
   * The tool_use message this advance has just appended, and its calls as recorded with it (none when they were
   * left for the tool phase to gate), so the tool phase need not read them back.
   */
  toolUseTurn: { seq: number; calls: ToolCallRow[]; verifiedCustomerId: string | null } | null;
  /**
   * The transcript as this advance knows it, or null: read it. While the run is active only its lease holder
   * appends to the transcript (customer text and staff replies are queued outside it), so a step that appended
   * in one statement extends this copy (`extendTranscript`); any other path drops it (`forgetTranscript`).
   */
  transcript: TranscriptRow[] | null;
  /** What the run has done (for the stop check): read with the state, brought up to date by each tool phase. */
  done: RunDone;
}

/** The effects this run recorded (tool names, from the ledger) and how many of its calls acted (succeeded, other than verifying). */
export interface RunDone {
  effects: string[];
  acted: number;
}

/**
 * `done` as two columns (`effects`, `acted`) of any statement: `runId` is the run's id (a value, or SQL such as
 * "Run".id). Calls whose outcome the same statement writes are not in its snapshot: name them in `settlingNow`,
 * and the caller counts them.
 */
export function runDoneColumns(runId: string | Prisma.Sql, settlingNow: string[] = []): Prisma.Sql {
  return Prisma.sql`
    (SELECT coalesce(array_agg(DISTINCT "toolName"), '{}') FROM "EffectLedger" WHERE "runId" = ${runId}) AS effects,
    (SELECT count(*)::int FROM "ToolCall" WHERE "runId" = ${runId} AND status = 'SUCCEEDED' AND name <> 'verify_customer' AND NOT (id = ANY(${settlingNow}::text[]))) AS acted`;
}

/** Whether a call counts in `acted`: it succeeded and was not the identity check. */
export const actedCall = (c: { status: string; name: string }) => c.status === "SUCCEEDED" && c.name !== "verify_customer";

/** After a step appended `row` in one (committed) statement: this advance's copy, and the process's cache, grow. */
export function extendTranscript(state: RunState, row: TranscriptRow): void {
  noteCommitted(state.ref.conversationId, row);
  const last = state.transcript?.[state.transcript.length - 1];
  if (state.transcript && (!last || last.seq < row.seq)) state.transcript.push(row);
  else state.transcript = null;
}

export function forgetTranscript(state: RunState): void {
  state.transcript = null;
}

export type RunStateRow = RunCountersState & RunDone & { id: string; tenantId: string; conversationId: string; policyVersion: number; model: string };

export const RUN_STATE_COLUMNS = Prisma.sql`id, "tenantId", "conversationId", "policyVersion", model, "turnsUsed", "maxTurns", "inputTokens", "outputTokens",
  "tokenBudget", "activeMs", "requestAttempts", "maxTokensRetries", "pauseTurns", corrections, ${runDoneColumns(Prisma.raw(`"Run".id`))}`;

/** A run as the caller that created it knows it: its state, and the customer message that started it. */
export interface CreatedRun {
  state: RunStateRow;
  messageSeq: number;
}

/** A new run's state as its creator writes it (every counter at zero), so whoever advances it need not read it. */
export function newRunStateRow(a: { id: string; tenantId: string; conversationId: string; policy: Policy; model: string }): RunStateRow {
  const b = a.policy.rules.budgets;
  return {
    id: a.id, tenantId: a.tenantId, conversationId: a.conversationId, policyVersion: a.policy.version, model: a.model,
    turnsUsed: 0, maxTurns: b.maxTurns, inputTokens: 0, outputTokens: 0, tokenBudget: b.tokenBudget, activeMs: 0,
    requestAttempts: 0, maxTokensRetries: 0, pauseTurns: 0, corrections: 0, effects: [], acted: 0,
  };
}

/** Builds the state from the row a claim returned, or reads it (when the lease was taken at creation or resume). */
export async function loadRunState(db: Db, runId: string, claimed?: RunStateRow | null): Promise<RunState> {
  const [row] = claimed ? [claimed] : await sqlOf(db).query<RunStateRow>(Prisma.sql`SELECT ${RUN_STATE_COLUMNS} FROM "Run" WHERE "Run".id = ${runId}`);
  if (!row) throw new Error(`run ${runId} not found`);
  const { id, tenantId, conversationId, policyVersion, model, effects, acted, ...counters } = row;
  return { ref: { id, tenantId, conversationId }, policy: await loadPolicy(db, tenantId, policyVersion), model, counters, toolUseTurn: null, transcript: null, done: { effects, acted } };
}
