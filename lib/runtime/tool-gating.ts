import { randomUUID } from "node:crypto";
import type { PrismaTx, Json } from "@/lib/db/prisma-types";
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

export interface GateContext {
  run: RunRef;
  policy: Policy;
  conversation: { verifiedCustomerId: string | null; verificationExpiresAt: Date | null };
  previousCall: { name: string; canonicalInput: string } | null;
  now: Date;
}

function errorResult(category: ToolErrorBody["error_category"], message: string, retryable: boolean, extra: Record<string, unknown> = {}): ToolErrorBody {
  return { error_category: category, is_retryable: retryable, message, ...extra };
}

/**
 * Validates a proposed tool_use and runs every gate on it, then records the call, each gate's decision with the
 * policy version, and what follows in ONE transaction: allow → APPROVED (to run); ask → PARKED with an approval
 * handoff; deny → DENIED with a structured error result (and, above the refund ceiling, an escalation opened by
 * code); defer → DEFERRED. Returns the recorded call as written.
 */
export async function gateToolUse(db: PrismaTx, ctx: GateContext, use: ToolUse, position: number, messageSeq: number, gates?: readonly Gate[]) {
  const tool = getTool(use.name);
  const base = { tenantId: ctx.run.tenantId, runId: ctx.run.id, toolUseId: use.id, name: use.name, input: (use.input ?? {}) as Json, position, messageSeq };

  // Input that does not match the schema never reaches a gate or a tool: the model gets the validation errors.
  const parsed = tool ? tool.inputSchema.safeParse(use.input) : null;
  if (tool && parsed && !parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; ");
    const call = await db.toolCall.create({
      data: { ...base, status: "DENIED", gateDecision: "deny", gateReason: `invalid input: ${issues}`, isError: true, result: errorResult("business_rule", `Invalid arguments for ${use.name}: ${issues}. Fix them and call again.`, true) as unknown as Json },
    });
    await db.gateDecision.create({ data: { tenantId: ctx.run.tenantId, runId: ctx.run.id, toolCallId: call.id, toolUseId: use.id, gate: "input_schema", decision: "deny", reason: issues, policyVersion: ctx.policy.version } });
    return { ...call, status: call.status as string, review: null, decidedById: null } satisfies ToolCallRow;
  }

  const input = (parsed?.success ? parsed.data : use.input ?? {}) as Record<string, unknown>;
  let facts: CallFacts = { summary: use.name };
  try {
    if (tool) facts = await tool.facts(input, { db, tenantId: ctx.run.tenantId });
  } catch (err) {
    console.error(`[gates] facts for ${use.name} failed`, err);
  }
  const canonicalInput = canonicalJson(input);
  const evaluation: GateEvaluation = evaluateGates({
    toolName: use.name,
    input,
    canonicalInput,
    facts,
    isKnownTool: !!tool,
    accountAction: tool?.accountAction ?? true,
    sideEffect: tool?.sideEffect ?? true,
    state: { verifiedCustomerId: ctx.conversation.verifiedCustomerId, verificationExpiresAt: ctx.conversation.verificationExpiresAt, now: ctx.now, previousCall: ctx.previousCall },
    policy: ctx.policy,
  }, gates);
  const { verdict } = evaluation;
  const key = tool?.sideEffect ? idempotencyKey({ tenantId: ctx.run.tenantId, runId: ctx.run.id, toolUseId: use.id, toolName: use.name, input }) : null;

  const status = verdict.decision === "allow" ? "APPROVED" : verdict.decision === "ask" ? "PARKED" : verdict.decision === "defer" ? "DEFERRED" : "DENIED";
  let result: ToolErrorBody | null = null;
  if (verdict.decision === "deny") {
    let extra: Record<string, unknown> = { gate: verdict.gate };
    if (verdict.escalate) {
      // A deny that must not be retried around starts the escalation itself, not only tells the model to.
      const handoff = await openEscalation(db, {
        tenantId: ctx.run.tenantId,
        conversationId: ctx.run.conversationId,
        runId: ctx.run.id,
        trigger: "policy_ceiling",
        rootCause: verdict.reason,
        recommendedAction: `Review the request (${facts.summary}) and decide on an exception or an alternative with the customer.`,
        reason: `Above the policy ceiling: ${facts.summary}.`,
        orderNumber: facts.orderNumber ?? null,
        amountCents: facts.amountCents ?? null,
      });
      extra = { ...extra, escalated: true, handoff_id: handoff.id };
    }
    result = errorResult(verdict.errorCategory ?? "permission", verdict.reason, !verdict.escalate && (verdict.retryable ?? false), extra);
  }

  // defer: the call is gated again later (the run waits for a retry), not answered now.
  const deferUntil = verdict.decision === "defer" ? new Date(ctx.now.getTime() + deferMs()) : null;
  // The call and every gate's decision (with the policy version) in one statement.
  const id = randomUUID();
  await db.$executeRaw`
    WITH c AS (
      INSERT INTO "ToolCall" (id, "tenantId", "runId", "toolUseId", name, input, "effectiveInput", status, "gateDecision", "gateReason", "idempotencyKey", "isError", result, position, "messageSeq", "nextAttemptAt", "updatedAt")
      VALUES (${id}, ${ctx.run.tenantId}, ${ctx.run.id}, ${use.id}, ${use.name}, ${JSON.stringify(use.input ?? {})}::jsonb, ${JSON.stringify(input)}::jsonb,
              ${status}::"ToolCallStatus", ${verdict.decision}::"GateOutcome", ${`${verdict.gate}: ${verdict.reason}`}, ${key}, ${result !== null},
              ${result === null ? null : JSON.stringify(result)}::jsonb, ${position}, ${messageSeq}, ${deferUntil}, now())
      RETURNING id
    )
    INSERT INTO "GateDecision" (id, "tenantId", "runId", "toolCallId", "toolUseId", gate, decision, reason, "policyVersion")
    SELECT gen_random_uuid()::text, ${ctx.run.tenantId}, ${ctx.run.id}, c.id, ${use.id}, r.gate, r.decision::"GateOutcome", r.reason, ${ctx.policy.version}
    FROM c, jsonb_to_recordset(${JSON.stringify(evaluation.records.map((r) => ({ gate: r.gate, decision: r.decision, reason: r.reason })))}::jsonb) AS r(gate text, decision text, reason text)`;
  const call: ToolCallRow = {
    id, tenantId: ctx.run.tenantId, runId: ctx.run.id, toolUseId: use.id, name: use.name, input: use.input ?? {}, effectiveInput: input, status,
    idempotencyKey: key, attempts: 0, nextAttemptAt: deferUntil, result, review: null, decidedById: null, isError: result !== null, position, messageSeq,
  };
  if (verdict.decision === "ask") {
    await openApproval(db, { run: ctx.run, call, facts, verdict, policyVersion: ctx.policy.version, ttlHours: ctx.policy.rules.approvalTtlHours, now: ctx.now });
  }
  return call;
}
