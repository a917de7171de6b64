import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { escalationRecord, readHandoffContext } from "@/lib/handoffs/records";
import { addAudit } from "@/lib/store/audit";
import { addHandoff, pendingEscalation } from "@/lib/store/handoffs";
import { Statement } from "@/lib/store/statement";
import { changeConversation } from "@/lib/store/transcript";

/**
 * The widget's "talk to a person" action: escalates at once, in code, without asking the model — one of the three
 * triggers, and the one that must never stall. Idempotent: one open escalation per conversation.
 */
export async function requestHuman(client: object, a: { tenantId: string; conversationId: string }) {
  const db = storeOf(client);
  const conversation = await db
    .selectFrom("Conversation")
    .select(["id", "status", "activeRunId"])
    .where("id", "=", a.conversationId)
    .where("tenantId", "=", a.tenantId)
    .executeTakeFirst();
  if (!conversation) throw new AppError("NOT_FOUND", "This conversation was not found.");
  if (conversation.status === "human") return { status: "with_person" as const, handoffId: null };
  const existing = await pendingEscalation(db, a.conversationId);
  if (existing) return { status: "waiting_for_person" as const, handoffId: existing.id };

  const handoffId = randomUUID();
  const ctx = await readHandoffContext(db, { id: conversation.activeRunId, conversationId: a.conversationId, tenantId: a.tenantId });
  const notice = "I've asked a person from our team to join. They'll reply here as soon as they can.";
  const s = Statement.plain();
  addHandoff(s, "esc", {
    id: handoffId,
    tenantId: a.tenantId,
    conversationId: a.conversationId,
    runId: conversation.activeRunId,
    kind: "ESCALATION",
    payload: escalationRecord(ctx, {
      trigger: "customer_request",
      rootCause: "The customer pressed “Talk to a person”.",
      recommendedAction: "Take over the conversation and reply to the customer.",
      reason: "The customer asked for a person.",
    }),
  });
  // Only if this request opened it (a racing one inserts nothing): the conversation waits for a person, the
  // customer is told so.
  changeConversation(s, {
    conversationId: a.conversationId,
    tenantId: a.tenantId,
    from: ["esc"],
    status: sql`CASE WHEN status = 'open' THEN 'escalated'::"ConversationStatus" ELSE status END`,
    messages: [
      {
        tenantId: a.tenantId,
        conversationId: a.conversationId,
        role: "assistant",
        author: "HARNESS",
        content: [{ type: "text", text: notice }],
        inTranscript: false,
        shownToCustomer: true,
        displayText: notice,
      },
    ],
  });
  addAudit(
    s,
    "audit",
    {
      tenantId: a.tenantId,
      runId: conversation.activeRunId,
      actor: "customer",
      action: "handoff.escalated",
      subject: handoffId,
      data: { trigger: "customer_request" },
    },
    { from: ["esc"] },
  );
  const row = await s.run<{ opened: boolean }>(db, sql`EXISTS (SELECT 1 FROM esc) AS opened`);
  if (!row?.opened) {
    const now = await pendingEscalation(db, a.conversationId);
    return { status: "waiting_for_person" as const, handoffId: now?.id ?? null };
  }
  return { status: "waiting_for_person" as const, handoffId };
}
