// Tool calls: one row per tool_use block, written with every gate's decision (and the policy version) when the
// model proposes it, then settled with the tool_result the model reads.
import { sql } from "kysely";
import type { Store, ToolCallStatus } from "@/lib/db/kysely";
import { json, type Sql, type Statement, type WriteOptions } from "./statement";

/** A tool call as the runtime works with it. */
export interface ToolCallRow {
  id: string;
  tenantId: string;
  runId: string;
  toolUseId: string;
  name: string;
  input: unknown;
  effectiveInput: unknown;
  status: ToolCallStatus;
  idempotencyKey: string | null;
  attempts: number;
  nextAttemptAt: Date | null;
  result: unknown;
  review: unknown;
  decidedById: string | null;
  isError: boolean;
  position: number;
  messageSeq: number;
  gateFacts: unknown;
  scope: string | null;
}

/** One gate's decision on a call, for the audit trail. */
export interface GateRecordRow {
  gate: string;
  decision: "allow" | "deny" | "ask" | "defer";
  reason: string;
}

/** A call to record, as the gates decided it (or, for a read-only call run at once, as it ended). */
export interface NewToolCall {
  id: string;
  toolUseId: string;
  name: string;
  input: unknown;
  effectiveInput: unknown;
  status: ToolCallStatus;
  decision: "allow" | "deny" | "ask" | "defer";
  reason: string;
  idempotencyKey: string | null;
  isError: boolean;
  result: unknown;
  attempts: number;
  position: number;
  nextAttemptAt: Date | null;
  gateFacts: unknown;
  records: GateRecordRow[];
}

/**
 * Adds the INSERT of the calls of one assistant message (CTE `name`) and of every gate decision on them
 * (`${name}_gates`). `messageSeq`: the message's seq, or SQL for it when the same statement appends the message.
 */
export function addToolCalls(
  s: Statement,
  name: string,
  run: { id: string; tenantId: string },
  calls: NewToolCall[],
  messageSeq: number | Sql,
  policyVersion: number,
  opts: WriteOptions & { scope?: string | null } = {},
): void {
  if (!calls.length) return;
  s.insertRecords(
    name,
    "ToolCall",
    calls.map((c) => ({
      id: c.id,
      toolUseId: c.toolUseId,
      name: c.name,
      input: c.input ?? {},
      effectiveInput: c.effectiveInput,
      status: c.status,
      gateDecision: c.decision,
      gateReason: c.reason,
      idempotencyKey: c.idempotencyKey,
      isError: c.isError,
      result: c.result,
      attempts: c.attempts,
      position: c.position,
      nextAttemptAt: c.nextAttemptAt?.toISOString() ?? null,
      gateFacts: c.gateFacts ?? null,
    })),
    {
      id: "text",
      toolUseId: "text",
      name: "text",
      input: "jsonb",
      effectiveInput: "jsonb",
      status: '"ToolCallStatus"',
      gateDecision: '"GateOutcome"',
      gateReason: "text",
      idempotencyKey: "text",
      isError: "boolean",
      result: "jsonb",
      attempts: "int",
      position: "int",
      nextAttemptAt: "timestamp(3)",
      gateFacts: "jsonb",
    },
    { tenantId: run.tenantId, runId: run.id, messageSeq, updatedAt: sql`now()`, scope: opts.scope ?? null },
    { from: opts.from, where: opts.where, returning: sql`id` },
  );
  const decisions = calls.flatMap((c) =>
    c.records.map((r) => ({ toolCallId: c.id, toolUseId: c.toolUseId, gate: r.gate, decision: r.decision, reason: r.reason })),
  );
  s.insertRecords(
    `${name}_gates`,
    "GateDecision",
    decisions,
    { toolCallId: "text", toolUseId: "text", gate: "text", decision: '"GateOutcome"', reason: "text" },
    { id: sql`gen_random_uuid()::text`, tenantId: run.tenantId, runId: run.id, policyVersion },
    { from: opts.from, where: opts.where },
  );
}

/** A call's outcome: its status, the result the model reads, and when it is tried again. */
export interface CallSettlement {
  status: ToolCallStatus;
  result: unknown;
  isError: boolean;
  attempts: number;
  nextAttemptAt?: Date | null;
  /** the call goes back to the gates (DEFERRED) on this gate's word, recorded in the audit trail with its reason */
  judgedAgain?: { gate: string; reason: string; policyVersion: number };
}

/** Adds the UPDATE recording a call's outcome (and, for a call judged again, the gate decision that sent it back). */
export function settleCall(s: Statement, name: string, callId: string, c: CallSettlement, opts: Omit<WriteOptions, "where"> = {}): void {
  const again = c.judgedAgain;
  s.update(
    name,
    "ToolCall",
    {
      status: sql`${c.status}::"ToolCallStatus"`,
      result: json(c.result),
      isError: c.isError,
      attempts: c.attempts,
      nextAttemptAt: c.nextAttemptAt ?? null,
      ...(again ? { gateDecision: sql`'defer'::"GateOutcome"`, gateReason: again.reason } : {}),
      updatedAt: sql`now()`,
    },
    sql<boolean>`"ToolCall".id = ${callId}`,
    again ? { ...opts, returning: sql`"ToolCall".id, "ToolCall"."tenantId", "ToolCall"."runId", "ToolCall"."toolUseId"` } : opts,
  );
  if (again) {
    s.insert(
      `${name}_gate`,
      "GateDecision",
      {
        id: sql`gen_random_uuid()::text`,
        tenantId: sql`${sql.ref(`${name}.tenantId`)}`,
        runId: sql`${sql.ref(`${name}.runId`)}`,
        toolCallId: sql`${sql.ref(`${name}.id`)}`,
        toolUseId: sql`${sql.ref(`${name}.toolUseId`)}`,
        gate: again.gate,
        decision: sql`'defer'::"GateOutcome"`,
        reason: again.reason,
        policyVersion: again.policyVersion,
      },
      { from: [name] },
    );
  }
}

const CALL_COLUMNS = [
  "id",
  "tenantId",
  "runId",
  "toolUseId",
  "name",
  "input",
  "effectiveInput",
  "status",
  "idempotencyKey",
  "attempts",
  "nextAttemptAt",
  "result",
  "review",
  "decidedById",
  "isError",
  "position",
  "messageSeq",
  "gateFacts",
  "scope",
] as const;

/** The calls of one assistant message of the run's own model, in the order of its tool_use blocks. */
export async function callsOfMessage(db: Store, runId: string, messageSeq: number): Promise<ToolCallRow[]> {
  return db
    .selectFrom("ToolCall")
    .select(CALL_COLUMNS)
    .where("runId", "=", runId)
    .where("messageSeq", "=", messageSeq)
    .where("scope", "is", null)
    .orderBy("position")
    .execute();
}

/**
 * The calls of the run's latest tool_use message (the run's own, not a specialist's), with that message's seq; null
 * when it has none. A resumed run reads it while it reads the transcript (the message is its last assistant one).
 */
export async function callsOfLatestMessage(db: Store, runId: string): Promise<{ seq: number; calls: ToolCallRow[] } | null> {
  return latestMessageCalls((await callsOfLatestMessageRead(db, runId).execute()) as ToolCallRow[]);
}

/** The query behind `callsOfLatestMessage`, for a caller that sends it with other statements; `latestMessageCalls` reads its rows. */
export function callsOfLatestMessageRead(db: Store, runId: string) {
  return db
    .selectFrom("ToolCall")
    .select(CALL_COLUMNS)
    .where("runId", "=", runId)
    .where("scope", "is", null)
    .where("messageSeq", "=", (eb) =>
      eb
        .selectFrom("ToolCall")
        .select((e) => e.fn.max("messageSeq").as("m"))
        .where("runId", "=", runId)
        .where("scope", "is", null),
    )
    .orderBy("position");
}

export function latestMessageCalls(calls: ToolCallRow[]): { seq: number; calls: ToolCallRow[] } | null {
  return calls.length ? { seq: calls[0]!.messageSeq, calls } : null;
}

/** The calls a specialist proposed in its scope (lib/agents/namespace), in order. */
export async function callsOfScope(db: Store, runId: string, scope: string): Promise<ToolCallRow[]> {
  return db
    .selectFrom("ToolCall")
    .select(CALL_COLUMNS)
    .where("runId", "=", runId)
    .where("scope", "=", scope)
    .orderBy("createdAt")
    .orderBy("position")
    .execute();
}

/** Every call of a run, in order (for handoff summaries). */
export async function callsOfRun(db: Store, runId: string): Promise<ToolCallRow[]> {
  return db.selectFrom("ToolCall").select(CALL_COLUMNS).where("runId", "=", runId).orderBy("messageSeq").orderBy("position").execute();
}
