import type { PrismaClient } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { openEscalation } from "@/lib/handoffs/escalation";
import { appendMessage } from "@/lib/runtime/transcript";

/**
 * The widget's "talk to a person" action: escalates at once, in code, without asking the model — one of the
 * three triggers, and the one that must never stall. Idempotent: one open escalation per conversation.
 */
export async function requestHuman(db: PrismaClient, a: { tenantId: string; conversationId: string }) {
  return db.$transaction(async (tx) => {
    const conversation = await tx.conversation.findFirst({ where: { id: a.conversationId, tenantId: a.tenantId } });
    if (!conversation) throw new AppError("NOT_FOUND", "This conversation was not found.");
    if (conversation.status === "human") return { status: "with_person" as const, handoffId: null };
    const existing = await tx.handoff.findFirst({ where: { conversationId: a.conversationId, kind: "ESCALATION", status: "PENDING" } });
    if (existing) return { status: "waiting_for_person" as const, handoffId: existing.id };
    const handoff = await openEscalation(tx, {
      tenantId: a.tenantId,
      conversationId: a.conversationId,
      runId: conversation.activeRunId,
      trigger: "customer_request",
      rootCause: "The customer pressed “Talk to a person”.",
      recommendedAction: "Take over the conversation and reply to the customer.",
      reason: "The customer asked for a person.",
    });
    const notice = "I've asked a person from our team to join. They'll reply here as soon as they can.";
    await appendMessage(tx, { tenantId: a.tenantId, conversationId: a.conversationId, role: "assistant", author: "HARNESS", content: [{ type: "text", text: notice }], inTranscript: false, shownToCustomer: true, displayText: notice });
    return { status: "waiting_for_person" as const, handoffId: handoff.id };
  });
}
