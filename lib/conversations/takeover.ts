import { z } from "zod";
import type { PrismaClient } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { publishEvent } from "@/lib/events";
import { appendMessage } from "@/lib/runtime/transcript";
import { customerTextSchema } from "./intake";

type Actor = { tenantId: string; staffId: string };

async function lockConversation(tx: Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0], actor: Actor, conversationId: string) {
  const rows = await tx.$queryRaw<Array<{ id: string; status: string; ownerStaffId: string | null; activeRunId: string | null }>>`
    SELECT id, status::text AS status, "ownerStaffId", "activeRunId" FROM "Conversation" WHERE id = ${conversationId} AND "tenantId" = ${actor.tenantId} FOR UPDATE`;
  if (!rows[0]) throw new AppError("NOT_FOUND", "This conversation was not found.");
  return rows[0];
}

/**
 * A person takes a conversation over. From this moment the agent cannot reply to it: the run loop checks
 * ownership at the moment of sending, under the same row lock. Open escalations of the conversation are resolved.
 */
export async function takeOverConversation(db: PrismaClient, actor: Actor, conversationId: string) {
  return db.$transaction(async (tx) => {
    const conv = await lockConversation(tx, actor, conversationId);
    if (conv.status === "human" && conv.ownerStaffId && conv.ownerStaffId !== actor.staffId) {
      const owner = await tx.staffUser.findUnique({ where: { id: conv.ownerStaffId } });
      throw new AppError("CONVERSATION_OWNED", `${owner?.name ?? "Another person"} already took over this conversation.`);
    }
    const staff = await tx.staffUser.findUniqueOrThrow({ where: { id: actor.staffId } });
    await tx.conversation.update({ where: { id: conversationId }, data: { status: "human", ownerStaffId: actor.staffId } });
    const resolved = await tx.handoff.findMany({ where: { conversationId, kind: "ESCALATION", status: "PENDING" }, select: { id: true, version: true } });
    for (const h of resolved) {
      await tx.handoff.update({ where: { id: h.id }, data: { status: "RESOLVED", decidedById: actor.staffId, decidedAt: new Date(), decision: "takeover", version: h.version + 1, claimedById: null, claimExpiresAt: null } });
      await publishEvent(tx, { tenantId: actor.tenantId, conversationId, type: "handoff.updated", data: { handoffId: h.id, status: "RESOLVED" } });
    }
    const notice = `${staff.name} from our team has joined the conversation.`;
    await appendMessage(tx, { tenantId: actor.tenantId, conversationId, role: "assistant", author: "HARNESS", content: [{ type: "text", text: notice }], inTranscript: false, shownToCustomer: true, displayText: notice });
    await tx.auditEvent.create({ data: { tenantId: actor.tenantId, actor: staff.email, action: "conversation.taken_over", subject: conversationId, data: {} } });
    await publishEvent(tx, { tenantId: actor.tenantId, conversationId, type: "conversation.updated", data: { status: "human", ownerStaffId: actor.staffId } });
    return { conversationId, status: "human" as const, owner: staff.name };
  });
}

/** A person's reply to the customer. Only the person who owns the conversation may send one. */
export async function replyAsStaff(db: PrismaClient, actor: Actor, conversationId: string, rawText: unknown) {
  const parsed = customerTextSchema.safeParse(rawText);
  if (!parsed.success) throw new AppError("INVALID_INPUT", parsed.error.issues[0]?.message ?? "Invalid message.");
  return db.$transaction(async (tx) => {
    const conv = await lockConversation(tx, actor, conversationId);
    if (conv.status !== "human" || conv.ownerStaffId !== actor.staffId) {
      throw new AppError("FORBIDDEN", "Take the conversation over before replying.");
    }
    const staff = await tx.staffUser.findUniqueOrThrow({ where: { id: actor.staffId } });
    // Kept in the transcript as the support side's words, so the agent knows what a person said after hand-back —
    // unless a run still waits between a tool_use and its result, where nothing may be inserted.
    const msg = await appendMessage(tx, {
      inTranscript: !conv.activeRunId,
      tenantId: actor.tenantId, conversationId, role: "assistant", author: "STAFF", staffId: staff.id,
      content: [{ type: "text", text: `[${staff.name} from the support team replied to the customer]: ${parsed.data}` }],
      shownToCustomer: true, displayText: parsed.data,
    });
    return { conversationId, seq: msg.seq, author: staff.name };
  });
}

/** Hands a conversation back to the agent. */
export async function handBackConversation(db: PrismaClient, actor: Actor, conversationId: string) {
  return db.$transaction(async (tx) => {
    const conv = await lockConversation(tx, actor, conversationId);
    if (conv.status !== "human") throw new AppError("CONFLICT", "This conversation is not held by a person.");
    if (conv.ownerStaffId !== actor.staffId) throw new AppError("FORBIDDEN", "Only the person who took it over can hand it back.");
    const staff = await tx.staffUser.findUniqueOrThrow({ where: { id: actor.staffId } });
    await tx.conversation.update({ where: { id: conversationId }, data: { status: "open", ownerStaffId: null } });
    const notice = `${staff.name} handed the conversation back to our virtual assistant.`;
    await appendMessage(tx, { tenantId: actor.tenantId, conversationId, role: "assistant", author: "HARNESS", content: [{ type: "text", text: notice }], inTranscript: false, shownToCustomer: true, displayText: notice });
    await tx.auditEvent.create({ data: { tenantId: actor.tenantId, actor: staff.email, action: "conversation.handed_back", subject: conversationId, data: {} } });
    await publishEvent(tx, { tenantId: actor.tenantId, conversationId, type: "conversation.updated", data: { status: "open" } });
    return { conversationId, status: "open" as const };
  });
}

export const conversationIdSchema = z.string().min(1).max(64);
