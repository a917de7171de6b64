import type { PrismaTx, Json } from "@/lib/db/prisma-types";
import type { CallFacts } from "@/lib/tools/types";
import type { GateRecord } from "@/lib/gates/evaluate";
import { formatCents } from "@/lib/money";
import { publishEvent } from "@/lib/events";
import { appendMessage } from "@/lib/runtime/transcript";
import { agentTried, conversationCustomer, customerAsk } from "./customer-summary";
import type { HandoffPayload } from "./record";

/** What a pending call is about, in the customer's terms: "Your $250.00 refund for A-1002". */
export function pendingSubject(toolName: string | undefined, p: { orderNumber?: string | null; amountCents?: number | null; summary?: string }): string {
  const order = p.orderNumber ?? "your order";
  switch (toolName) {
    case "refund_order":
      return `Your ${p.amountCents != null ? formatCents(p.amountCents) + " " : ""}refund for ${order}`;
    case "cancel_order":
      return `Your request to cancel ${order}`;
    case "create_replacement":
      return `Your replacement for ${order}`;
    default:
      return p.summary ? `Your request (${p.summary})` : "Your request";
  }
}

/** What the customer is told while a call waits for a person: honest, specific, never "done". */
export function pendingNotice(toolName: string, facts: CallFacts): string {
  const decision = toolName === "cancel_order" ? "confirmation" : "approval";
  return `${pendingSubject(toolName, facts)} is with our team for ${decision}. I'll update you here as soon as they decide.`;
}

function recommendedAction(toolName: string, facts: CallFacts): string {
  return `Approve: ${facts.summary}.`;
}

/**
 * Parks a call for a person: the approval handoff carries the exact pending call, the rule that asked and a
 * self-contained summary; the customer is told honestly that it waits. Same transaction as the gate decision.
 */
export async function openApproval(
  db: PrismaTx,
  a: {
    run: { id: string; tenantId: string; conversationId: string };
    call: { id: string; toolUseId: string; name: string; input: unknown };
    facts: CallFacts;
    verdict: GateRecord;
    policyVersion: number;
    ttlHours: number;
    now: Date;
  },
) {
  const payload: HandoffPayload = {
    customer: await conversationCustomer(db, a.run.conversationId),
    asked: await customerAsk(db, a.run.conversationId, a.run.id),
    tried: await agentTried(db, a.run.id),
    rootCause: a.verdict.reason,
    amountCents: a.facts.amountCents ?? null,
    recommendedAction: recommendedAction(a.call.name, a.facts),
    reason: `${a.facts.summary} needs approval: ${a.verdict.reason}`,
    trigger: "approval_required",
    orderNumber: a.facts.orderNumber ?? null,
    toolName: a.call.name,
    toolUseId: a.call.toolUseId,
    proposedInput: a.call.input as Record<string, unknown>,
    rule: { gate: a.verdict.gate, reason: a.verdict.reason, policyVersion: a.policyVersion },
  };
  const handoff = await db.handoff.create({
    data: {
      tenantId: a.run.tenantId,
      conversationId: a.run.conversationId,
      runId: a.run.id,
      toolCallId: a.call.id,
      kind: "APPROVAL",
      payload: payload as unknown as Json,
      amountCents: a.facts.amountCents ?? null,
      requiredApprovals: a.verdict.requiredApprovals ?? 1,
      expiresAt: new Date(a.now.getTime() + a.ttlHours * 3600_000),
    },
  });
  const notice = pendingNotice(a.call.name, a.facts);
  await appendMessage(db, {
    tenantId: a.run.tenantId,
    conversationId: a.run.conversationId,
    runId: a.run.id,
    role: "assistant",
    author: "HARNESS",
    content: [{ type: "text", text: notice }],
    inTranscript: false,
    shownToCustomer: true,
    displayText: notice,
  });
  await db.auditEvent.create({ data: { tenantId: a.run.tenantId, runId: a.run.id, actor: "harness", action: "handoff.approval_requested", subject: handoff.id, data: { tool: a.call.name, input: a.call.input as object, rule: a.verdict.gate } } });
  await publishEvent(db, { tenantId: a.run.tenantId, conversationId: a.run.conversationId, type: "handoff.created", data: { handoffId: handoff.id, kind: "APPROVAL" } });
  return handoff;
}
