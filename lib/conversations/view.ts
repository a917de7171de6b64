import type { PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { hashToken } from "./intake";

/** Finds a widget conversation by its visitor token (constant work: a hash lookup); a wrong token is NOT_FOUND. */
export async function conversationByToken(db: PrismaTx, tenantId: string, token: string) {
  if (typeof token !== "string" || token.length < 16 || token.length > 100)
    throw new AppError("NOT_FOUND", "This conversation was not found.");
  const conversation = await db.conversation.findFirst({ where: { tokenHash: hashToken(token), tenantId } });
  if (!conversation) throw new AppError("NOT_FOUND", "This conversation was not found.");
  return conversation;
}

/**
 * The conversation as the customer sees it: their messages, the agent's replies, notices and a person's
 * replies (with the person's name), plus an honest status: working, waiting for a person, or with a person.
 */
export async function customerView(db: PrismaTx, conversationId: string, afterSeq = 0) {
  const conversation = await db.conversation.findUniqueOrThrow({ where: { id: conversationId } });
  const [messages, run, pending, staff] = await Promise.all([
    db.message.findMany({ where: { conversationId, shownToCustomer: true, seq: { gt: afterSeq } }, orderBy: { seq: "asc" } }),
    conversation.activeRunId ? db.run.findUnique({ where: { id: conversation.activeRunId } }) : null,
    db.handoff.findMany({
      where: { conversationId, kind: "APPROVAL", status: "PENDING" },
      select: { id: true, amountCents: true, payload: true },
    }),
    db.staffUser.findMany({ where: { tenantId: conversation.tenantId }, select: { id: true, name: true } }),
  ]);
  const names = new Map(staff.map((s) => [s.id, s.name]));
  const owner = conversation.ownerStaffId ? (names.get(conversation.ownerStaffId) ?? "A person") : null;
  const status =
    conversation.status === "human"
      ? "with_person"
      : run?.phase === "WAITING_FOR_APPROVAL"
        ? "waiting_for_approval"
        : run?.phase === "RUNNING" || run?.phase === "WAITING_FOR_RETRY"
          ? "working"
          : conversation.status === "escalated"
            ? "waiting_for_person"
            : "idle";
  return {
    conversationId,
    status,
    owner,
    verified: !!conversation.verifiedCustomerId && (!conversation.verificationExpiresAt || conversation.verificationExpiresAt > new Date()),
    pendingApprovals: pending.length,
    lastSeq: conversation.messageCount,
    messages: messages.map((m) => ({
      seq: m.seq,
      from: m.author === "CUSTOMER" ? "customer" : m.author === "STAFF" ? "person" : m.author === "AGENT" ? "agent" : "system",
      name: m.author === "STAFF" && m.staffId ? (names.get(m.staffId) ?? "Support") : null,
      text: m.displayText ?? "",
      at: m.createdAt,
    })),
  };
}
export type CustomerView = Awaited<ReturnType<typeof customerView>>;
