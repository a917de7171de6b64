import type { PrismaTx, Json } from "@/lib/db/prisma-types";
import { publishEvent } from "@/lib/events";
import { agentTried, conversationCustomer, customerAsk } from "./customer-summary";
import type { HandoffPayload } from "./record";

export interface EscalationInput {
  tenantId: string;
  conversationId: string;
  runId: string | null;
  toolCallId?: string;
  trigger: string; // customer_request | policy_gap | no_progress | policy_ceiling | budget | refusal | model_failure | widget_button
  asked?: string;
  tried?: string[];
  rootCause: string;
  recommendedAction: string;
  reason: string;
  orderNumber?: string | null;
  amountCents?: number | null;
}

/**
 * Opens an escalation handoff and marks the conversation as waiting for a person. Idempotent: a tool call
 * escalates once, and a conversation keeps at most one open escalation (a repeat returns it).
 */
export async function openEscalation(db: PrismaTx, input: EscalationInput) {
  if (input.toolCallId) {
    const existing = await db.handoff.findUnique({ where: { toolCallId: input.toolCallId } });
    if (existing) return existing;
  }
  const open = await db.handoff.findFirst({ where: { conversationId: input.conversationId, kind: "ESCALATION", status: "PENDING" } });
  if (open) return open;

  const payload: HandoffPayload = {
    customer: await conversationCustomer(db, input.conversationId),
    asked: input.asked ?? (await customerAsk(db, input.conversationId, input.runId)),
    tried: [...(input.tried ?? []), ...(await agentTried(db, input.runId))],
    rootCause: input.rootCause || "Not diagnosed.",
    amountCents: input.amountCents ?? null,
    recommendedAction: input.recommendedAction || "Take over the conversation and help the customer.",
    reason: input.reason,
    trigger: input.trigger,
    orderNumber: input.orderNumber ?? null,
  };
  const handoff = await db.handoff.create({
    data: {
      tenantId: input.tenantId,
      conversationId: input.conversationId,
      runId: input.runId,
      toolCallId: input.toolCallId,
      kind: "ESCALATION",
      payload: payload as unknown as Json,
      amountCents: input.amountCents ?? null,
    },
  });
  await db.conversation.updateMany({ where: { id: input.conversationId, status: "open" }, data: { status: "escalated" } });
  await db.auditEvent.create({ data: { tenantId: input.tenantId, runId: input.runId, actor: input.toolCallId ? "agent" : "harness", action: "handoff.escalated", subject: handoff.id, data: { trigger: input.trigger, reason: input.reason } } });
  await publishEvent(db, { tenantId: input.tenantId, conversationId: input.conversationId, type: "handoff.created", data: { handoffId: handoff.id, kind: "ESCALATION" } });
  return handoff;
}
