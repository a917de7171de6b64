import { randomUUID } from "node:crypto";
import { Prisma } from "@/lib/db/prisma-types";
import { prismaOf, sqlOf, type Db } from "@/lib/db/sql";
import { getTool } from "@/lib/tools/registry";
import type { CallFacts, ToolErrorBody } from "@/lib/tools/types";
import { evaluateGates, type GateEvaluation } from "@/lib/gates/evaluate";
import type { Gate } from "@/lib/gates/types";
import type { Policy } from "@/lib/policy/policy";
import { openEscalation } from "@/lib/handoffs/escalation";
import { openApproval } from "@/lib/handoffs/approval";
import { canonicalJson, idempotencyKey } from "./idempotency";
import type { ToolCallRow } from "./tool-call-rows";

const deferMs = () => Number(process.env.SUPPORT_DEFER_MS ?? 5000);

export interface ToolUse {
  id: string;
  name: string;
  input: unknown;
}

export interface RunRef {
  id: string;
  tenantId: string;
  conversationId: string;
}

export interface Verification {
  verifiedCustomerId: string | null;
  verificationExpiresAt: Date | null;
}

/** The conversation's verification as it is now (gates check it; execution binds it). */
export async function readVerification(db: Db, conversationId: string): Promise<Verification> {
  const [row] = await sqlOf(db).query<Verification>(Prisma.sql`
    SELECT "verifiedCustomerId", "verificationExpiresAt" FROM "Conversation" WHERE id = ${conversationId}`);
  if (!row) throw new Error(`conversation ${conversationId} not found`);
  return row;
}

export interface GateContext {
  run: RunRef;
  policy: Policy;
  /** The conversation's verification; may still be in flight (read alongside the gates' own reads). */
  conversation: Verification | Promise<Verification>;
  previousCall: { name: string; canonicalInput: string } | null;
  now: Date;
}

function errorResult(category: ToolErrorBody["error_category"], message: string, retryable: boolean, extra: Record<string, unknown> = {}): ToolErrorBody {
  return { error_category: category, is_retryable: retryable, message, ...extra };
}

/** A proposed call as the gates decided it (or, for a read-only call run at once, as it ended), not yet written. */
export interface GatedCall {
  id: string;
  use: ToolUse;
  position: number;
  status: string; // APPROVED | PARKED | DEFERRED | DENIED as gated; a read-only call run at once: its outcome
  attempts: number;
  decision: string;
  reason: string;
  effectiveInput: Record<string, unknown> | null;
  key: string | null;
  /** When a deferred call is gated again (or a read-only call run at once is retried). */
  nextAttemptAt: Date | null;
  /** What the model reads: a structured error for a refusal; a read-only call run at once, its result. */
  result: unknown;
  isError: boolean;
  records: Array<{ gate: string; decision: string; reason: string }>;
  /** What a person must see: an approval for a parked call, an escalation for a deny above the ceiling. */
  handoff: null | { kind: "approval"; facts: CallFacts; verdict: GateEvaluation["verdict"] } | { kind: "escalation"; facts: CallFacts; reason: string };
}

/**
 * Validates a proposed tool_use and runs every gate on it (reading what the gates need); writes nothing.
 * allow → APPROVED (to run); ask → PARKED for an approval; deny → DENIED with a structured error result (above
 * the refund ceiling, with an escalation opened by code); defer → DEFERRED (gated again later).
 */
export async function gateToolUse(db: Db, ctx: GateContext, use: ToolUse, position: number, gates?: readonly Gate[]): Promise<GatedCall> {
  const tool = getTool(use.name);

  // Input that does not match the schema never reaches a gate or a tool: the model gets the validation errors.
  const parsed = tool ? tool.inputSchema.safeParse(use.input) : null;
  if (tool && parsed && !parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; ");
    return {
      id: randomUUID(), use, position, attempts: 0, status: "DENIED", decision: "deny", reason: `invalid input: ${issues}`, effectiveInput: null, key: null, nextAttemptAt: null, isError: true, handoff: null,
      result: errorResult("business_rule", `Invalid arguments for ${use.name}: ${issues}. Fix them and call again.`, true),
      records: [{ gate: "input_schema", decision: "deny", reason: issues }],
    };
  }

  const input = (parsed?.success ? parsed.data : use.input ?? {}) as Record<string, unknown>;
  let facts: CallFacts = { summary: use.name };
  try {
    if (tool) facts = await tool.facts(input, { db, tenantId: ctx.run.tenantId });
  } catch (err) {
    console.error(`[gates] facts for ${use.name} failed`, err);
  }
  const conversation = await ctx.conversation;
  const evaluation: GateEvaluation = evaluateGates({
    toolName: use.name,
    input,
    canonicalInput: canonicalJson(input),
    facts,
    isKnownTool: !!tool,
    accountAction: tool?.accountAction ?? true,
    sideEffect: tool?.sideEffect ?? true,
    state: { verifiedCustomerId: conversation.verifiedCustomerId, verificationExpiresAt: conversation.verificationExpiresAt, now: ctx.now, previousCall: ctx.previousCall },
    policy: ctx.policy,
  }, gates);
  const { verdict } = evaluation;
  const status = verdict.decision === "allow" ? "APPROVED" : verdict.decision === "ask" ? "PARKED" : verdict.decision === "defer" ? "DEFERRED" : "DENIED";
  const escalate = verdict.decision === "deny" && !!verdict.escalate;
  return {
    id: randomUUID(), use, position, attempts: 0, status, decision: verdict.decision, reason: `${verdict.gate}: ${verdict.reason}`, effectiveInput: input,
    key: tool?.sideEffect ? idempotencyKey({ tenantId: ctx.run.tenantId, runId: ctx.run.id, toolUseId: use.id, toolName: use.name, input }) : null,
    // defer: the call is gated again later (the run waits for a retry), not answered now.
    nextAttemptAt: verdict.decision === "defer" ? new Date(ctx.now.getTime() + deferMs()) : null,
    isError: verdict.decision === "deny",
    result: verdict.decision === "deny" ? errorResult(verdict.errorCategory ?? "permission", verdict.reason, !escalate && (verdict.retryable ?? false), { gate: verdict.gate }) : null,
    records: evaluation.records.map((r) => ({ gate: r.gate, decision: r.decision, reason: r.reason })),
    handoff: verdict.decision === "ask" ? { kind: "approval", facts, verdict } : escalate ? { kind: "escalation", facts, reason: verdict.reason } : null,
  };
}

/**
 * Records a gated call with each gate's decision (and the policy version), opening what a person must see in the
 * same transaction: a deny that must not be retried around starts the escalation itself, not only tells the
 * model to; a parked call gets its approval handoff. Handoffs are opened through Prisma's models, so on the pg
 * fast path such a call asks for a Prisma transaction (`prismaOf`). Returns the call as written.
 */
export async function recordGatedCall(db: Db, ctx: GateContext, g: GatedCall, messageSeq: number): Promise<ToolCallRow> {
  let call = g;
  if (g.handoff?.kind === "escalation") {
    const { facts } = g.handoff;
    const handoff = await openEscalation(prismaOf(db), {
      tenantId: ctx.run.tenantId,
      conversationId: ctx.run.conversationId,
      runId: ctx.run.id,
      trigger: "policy_ceiling",
      rootCause: g.handoff.reason,
      recommendedAction: `Review the request (${facts.summary}) and decide on an exception or an alternative with the customer.`,
      reason: `Above the policy ceiling: ${facts.summary}.`,
      orderNumber: facts.orderNumber ?? null,
      amountCents: facts.amountCents ?? null,
    });
    call = { ...g, result: { ...(g.result as ToolErrorBody), escalated: true, handoff_id: handoff.id } };
  }
  const tx = g.handoff ? prismaOf(db) : db;
  await sqlOf(tx).execute(Prisma.sql`WITH ${recordCallCtes(ctx, call, messageSeq, "c", "g")} SELECT 1`);
  const row = callRow(ctx, call, messageSeq);
  if (g.handoff?.kind === "approval") {
    await openApproval(prismaOf(tx), { run: ctx.run, call: row, facts: g.handoff.facts, verdict: g.handoff.verdict, policyVersion: ctx.policy.version, ttlHours: ctx.policy.rules.approvalTtlHours, now: ctx.now });
  }
  return row;
}

/**
 * Records calls that need no handoff as CTEs of one statement fenced by the lease (the common case); `messageSeq`
 * is the tool_use message's number as SQL (it may be appended by the same statement). `rows` builds the calls as
 * written once that number is known.
 */
export function recordCallsFenced(ctx: GateContext, calls: GatedCall[], messageSeq: Prisma.Sql): { ctes: Prisma.Sql; rows: (seq: number) => ToolCallRow[] } {
  return {
    ctes: Prisma.join(calls.map((g, i) => recordCallCtes(ctx, g, messageSeq, `c${i}`, `g${i}`, Prisma.sql`FROM lease`)), ", "),
    rows: (seq) => calls.map((g) => callRow(ctx, g, seq)),
  };
}

/** The CTEs inserting one call (`callCte`) and every gate's decision on it (`gatesCte`); `from` makes it conditional. */
function recordCallCtes(ctx: GateContext, g: GatedCall, messageSeq: number | Prisma.Sql, callCte: string, gatesCte: string, from: Prisma.Sql = Prisma.empty): Prisma.Sql {
  return Prisma.sql`
    ${Prisma.raw(callCte)} AS (
      INSERT INTO "ToolCall" (id, "tenantId", "runId", "toolUseId", name, input, "effectiveInput", status, "gateDecision", "gateReason", "idempotencyKey", "isError", result, attempts, position, "messageSeq", "nextAttemptAt", "updatedAt")
      SELECT ${g.id}, ${ctx.run.tenantId}, ${ctx.run.id}, ${g.use.id}, ${g.use.name}, ${JSON.stringify(g.use.input ?? {})}::jsonb, ${g.effectiveInput === null ? null : JSON.stringify(g.effectiveInput)}::jsonb,
             ${g.status}::"ToolCallStatus", ${g.decision}::"GateOutcome", ${g.reason}, ${g.key}, ${g.isError},
             ${g.result === null ? null : JSON.stringify(g.result)}::jsonb, ${g.attempts}, ${g.position}, ${messageSeq}, ${g.nextAttemptAt}, now()
      ${from}
      RETURNING id
    ), ${Prisma.raw(gatesCte)} AS (
      INSERT INTO "GateDecision" (id, "tenantId", "runId", "toolCallId", "toolUseId", gate, decision, reason, "policyVersion")
      SELECT gen_random_uuid()::text, ${ctx.run.tenantId}, ${ctx.run.id}, ${Prisma.raw(callCte)}.id, ${g.use.id}, r.gate, r.decision::"GateOutcome", r.reason, ${ctx.policy.version}
      FROM ${Prisma.raw(callCte)}, jsonb_to_recordset(${JSON.stringify(g.records)}::jsonb) AS r(gate text, decision text, reason text)
    )`;
}

/** The call as the runtime works with it, once written (see recordCallsFenced). */
export function callRow(ctx: GateContext, g: GatedCall, messageSeq: number): ToolCallRow {
  return {
    id: g.id, tenantId: ctx.run.tenantId, runId: ctx.run.id, toolUseId: g.use.id, name: g.use.name, input: g.use.input ?? {}, effectiveInput: g.effectiveInput, status: g.status,
    idempotencyKey: g.key, attempts: g.attempts, nextAttemptAt: g.nextAttemptAt, result: g.result, review: null, decidedById: null, isError: g.isError, position: g.position, messageSeq,
  };
}
