// A person takes a conversation over, replies as themselves, and hands it back. The conversation's row is the lock:
// from the takeover's commit the agent cannot reply (its final reply checks ownership on the same row as it is
// written), and only the person who took it over may reply or hand it back.
import { randomUUID } from "node:crypto";
import { sql, type Transaction } from "kysely";
import { z } from "zod";
import type { DB } from "@/lib/db/kysely";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { escalationRecord, readHandoffContext } from "@/lib/handoffs/records";
import { addAudit } from "@/lib/store/audit";
import { addEvent } from "@/lib/store/events";
import { addHandoff, updateHandoff } from "@/lib/store/handoffs";
import { Statement } from "@/lib/store/statement";
import { changeConversation, takeQueuedText, withQueuedText } from "@/lib/store/transcript";
import { harnessNote, neutralise } from "@/lib/agent/framing";
import { endDraftAtCommit } from "@/lib/live/drafts";
import { retryOnHandBack } from "@/lib/runtime/retry-dead-letter";
import { customerTextSchema } from "./intake";

type Actor = { tenantId: string; staffId: string };

async function lockConversation(tx: Transaction<DB>, actor: Actor, conversationId: string) {
  const row = await tx
    .selectFrom("Conversation")
    .select(["id", "status", "ownerStaffId", "activeRunId", "queuedCount"])
    .where("id", "=", conversationId)
    .where("tenantId", "=", actor.tenantId)
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw new AppError("NOT_FOUND", "This conversation was not found.");
  const staff = await tx
    .selectFrom("StaffUser")
    .select(["id", "name", "email"])
    .where("id", "=", actor.staffId)
    .where("tenantId", "=", actor.tenantId)
    .executeTakeFirst();
  if (!staff) throw new AppError("FORBIDDEN", "You are not staff of this shop.");
  return { conv: row, staff };
}

const notice = (text: string) => ({
  role: "assistant" as const,
  author: "HARNESS" as const,
  content: [{ type: "text" as const, text }],
  inTranscript: false,
  shownToCustomer: true,
  displayText: text,
});

/**
 * A person takes a conversation over. From this moment the agent cannot reply to it: the run loop checks ownership
 * at the moment of sending, on the same row. Open escalations of the conversation are resolved.
 */
export async function takeOverConversation(client: object, actor: Actor, conversationId: string) {
  return storeOf(client)
    .transaction()
    .execute(async (tx) => {
      const { conv, staff } = await lockConversation(tx, actor, conversationId);
      if (conv.status === "human" && conv.ownerStaffId && conv.ownerStaffId !== actor.staffId) {
        // An owner who can no longer answer (deactivated, or no longer of this shop) holds nothing: anyone may take
        // it over — else the customer would wait on nobody.
        const owner = await tx
          .selectFrom("StaffUser")
          .select(["name", "deactivatedAt", "tenantId"])
          .where("id", "=", conv.ownerStaffId)
          .executeTakeFirst();
        if (owner && !owner.deactivatedAt && owner.tenantId === actor.tenantId)
          throw new AppError("CONVERSATION_OWNED", `${owner.name} already took over this conversation.`);
      }
      const escalations = await tx
        .selectFrom("Handoff")
        .select(["id", "version", "status"])
        .where("conversationId", "=", conversationId)
        .where("kind", "=", "ESCALATION")
        .where("status", "=", "PENDING")
        .execute();
      const s = Statement.plain();
      changeConversation(s, {
        conversationId,
        tenantId: actor.tenantId,
        status: "human",
        set: { ownerStaffId: actor.staffId },
        messages: [{ tenantId: actor.tenantId, conversationId, ...notice(`${staff.name} from our team has joined the conversation.`) }],
      });
      escalations.forEach((h, i) => {
        updateHandoff(s, `resolved${i}`, h, {
          status: "RESOLVED",
          decidedById: actor.staffId,
          decidedAt: new Date(),
          decision: "takeover",
          claimedById: null,
          claimExpiresAt: null,
        });
        addEvent(s, `resolved${i}_ev`, {
          tenantId: actor.tenantId,
          conversationId,
          type: "handoff.updated",
          data: { handoffId: h.id, status: "RESOLVED" },
        });
      });
      addAudit(s, "audit", { tenantId: actor.tenantId, actor: staff.email, action: "conversation.taken_over", subject: conversationId });
      addEvent(s, "ev", {
        tenantId: actor.tenantId,
        conversationId,
        type: "conversation.updated",
        data: { status: "human", ownerStaffId: actor.staffId },
      });
      await s.run(tx);
      // The agent's draft on screen goes with the takeover; no later one is published (lib/live/drafts).
      await endDraftAtCommit(tx, { tenantId: actor.tenantId, conversationId });
      return { conversationId, status: "human" as const, owner: staff.name };
    });
}

/** A person's reply to the customer. Only the person who owns the conversation may send one. */
export async function replyAsStaff(client: object, actor: Actor, conversationId: string, rawText: unknown) {
  const parsed = customerTextSchema.safeParse(rawText);
  if (!parsed.success) throw new AppError("INVALID_INPUT", parsed.error.issues[0]?.message ?? "Invalid message.");
  return storeOf(client)
    .transaction()
    .execute(async (tx) => {
      const { conv, staff } = await lockConversation(tx, actor, conversationId);
      if (conv.status !== "human" || conv.ownerStaffId !== actor.staffId)
        throw new AppError("FORBIDDEN", "Take the conversation over before replying.");
      // Kept in the transcript as the support side's words, so the agent knows what a person said after hand-back.
      // While a run holds the conversation (it may wait between a tool_use and its result, where nothing may be
      // inserted) the words are queued like a customer's text, as a support note: the run's next user message carries
      // them (its tool results, or the first message of the run after it), or the hand-back does (handBackConversation).
      const busy = conv.activeRunId !== null;
      const s = Statement.plain();
      changeConversation(s, {
        conversationId,
        tenantId: actor.tenantId,
        ...(busy ? { set: { queuedCount: sql`"queuedCount" + 1` } } : {}),
        messages: [
          {
            tenantId: actor.tenantId,
            conversationId,
            role: "assistant",
            author: "STAFF",
            staffId: staff.id,
            inTranscript: !busy,
            pendingDelivery: busy,
            content: [
              {
                type: "text",
                text: busy
                  ? harnessNote(`${staff.name} from the support team replied to the customer: ${neutralise(parsed.data)}`)
                  : `[${staff.name} from the support team replied to the customer]: ${parsed.data}`,
              },
            ],
            shownToCustomer: true,
            displayText: parsed.data,
          },
        ],
      });
      const row = await s.run<{ seq: number }>(tx, sql`seq FROM conv_m0`);
      return { conversationId, seq: row!.seq, author: staff.name };
    });
}

/** The conversation's messages waiting for delivery to the agent. */
async function pendingRows(tx: Transaction<DB>, conversationId: string): Promise<number> {
  const row = await tx
    .selectFrom("Message")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("conversationId", "=", conversationId)
    .where("pendingDelivery", "=", true)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Hands a conversation back to the agent. */
export async function handBackConversation(client: object, actor: Actor, conversationId: string) {
  return storeOf(client)
    .transaction()
    .execute(async (tx) => {
      const { conv, staff } = await lockConversation(tx, actor, conversationId);
      if (conv.status !== "human") throw new AppError("CONFLICT", "This conversation is not held by a person.");
      if (conv.ownerStaffId !== actor.staffId) throw new AppError("FORBIDDEN", "Only the person who took it over can hand it back.");
      // A run dead-lettered with its tool calls unanswered still holds the conversation: the agent carries on with it
      // (what was queued meanwhile reaches the model with the calls' results), not behind it.
      const runPutBack = conv.activeRunId !== null && (await retryOnHandBack(tx, { ...actor, email: staff.email }, conv.activeRunId));
      const s = Statement.plain();
      // What waited for a run that has ended meanwhile (a person's words, text the customer sent while it was busy)
      // goes into the transcript now, so the agent reads it before whatever the customer writes next.
      // Counted under the conversation's row lock (what queues or takes queued text updates that row first): never an
      // empty message in the transcript, whatever `queuedCount` says.
      const deliver = conv.activeRunId === null && conv.queuedCount > 0 && (await pendingRows(tx, conversationId)) > 0;
      if (deliver) takeQueuedText(s, "queued", conversationId, null, Number.MAX_SAFE_INTEGER);
      changeConversation(s, {
        conversationId,
        tenantId: actor.tenantId,
        status: "open",
        set: { ownerStaffId: null },
        ...(deliver ? { takeQueued: "queued" } : {}),
        messages: [
          ...(deliver
            ? [
                {
                  tenantId: actor.tenantId,
                  conversationId,
                  role: "user" as const,
                  author: "HARNESS" as const,
                  content: withQueuedText([], "queued"),
                },
              ]
            : []),
          { tenantId: actor.tenantId, conversationId, ...notice(`${staff.name} handed the conversation back to our virtual assistant.`) },
        ],
      });
      addAudit(s, "audit", { tenantId: actor.tenantId, actor: staff.email, action: "conversation.handed_back", subject: conversationId });
      addEvent(s, "ev", { tenantId: actor.tenantId, conversationId, type: "conversation.updated", data: { status: "open" } });
      await s.run(tx);
      return { conversationId, status: "open" as const, runPutBack };
    });
}

export const conversationIdSchema = z.string().min(1).max(64);

/**
 * The conversations a person held when they are deactivated (in the caller's transaction: lib/settings/staff): each
 * waits for a person again — an escalation in the queue saying why, the customer told that someone else will join —
 * instead of staying with someone who can no longer answer. Returns how many.
 */
export async function releaseConversationsOf(
  tx: Transaction<DB>,
  a: { tenantId: string; staff: { id: string; name: string }; actor: string },
): Promise<number> {
  const held = await tx
    .selectFrom("Conversation")
    .select(["id", "activeRunId"])
    .where("tenantId", "=", a.tenantId)
    .where("status", "=", "human")
    .where("ownerStaffId", "=", a.staff.id)
    .forUpdate()
    .execute();
  for (const conv of held) {
    const ctx = await readHandoffContext(tx, { id: conv.activeRunId, conversationId: conv.id, tenantId: a.tenantId });
    const handoffId = randomUUID();
    const s = Statement.plain();
    addHandoff(s, "esc", {
      id: handoffId,
      tenantId: a.tenantId,
      conversationId: conv.id,
      runId: conv.activeRunId,
      kind: "ESCALATION",
      payload: escalationRecord(ctx, {
        trigger: "owner_deactivated",
        rootCause: `${a.staff.name} took this conversation over and was then deactivated.`,
        recommendedAction: "Take over the conversation and reply to the customer.",
        reason: `${a.staff.name} can no longer answer this customer.`,
      }),
    });
    changeConversation(s, {
      conversationId: conv.id,
      tenantId: a.tenantId,
      status: "escalated",
      set: { ownerStaffId: null },
      messages: [
        {
          tenantId: a.tenantId,
          conversationId: conv.id,
          ...notice(`${a.staff.name} is no longer available. Another person from our team will join here as soon as they can.`),
        },
      ],
    });
    addAudit(s, "audit", {
      tenantId: a.tenantId,
      runId: conv.activeRunId,
      actor: a.actor,
      action: "conversation.released",
      subject: conv.id,
      data: { staffId: a.staff.id, why: "deactivated", handoffId },
    });
    addEvent(s, "ev", {
      tenantId: a.tenantId,
      conversationId: conv.id,
      type: "conversation.updated",
      data: { status: "escalated", ownerStaffId: null },
    });
    await s.run(tx);
  }
  return held.length;
}
