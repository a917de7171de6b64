import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import type { PrismaClient, PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { loadPolicy } from "@/lib/runtime/policy";
import { startRun, noticeToCustomer, type LeaseClaim } from "@/lib/runtime/run-end";
import { appendMessage, type ContentBlock } from "@/lib/runtime/transcript";
import { pendingSubject } from "@/lib/handoffs/approval";
import { publishEvent } from "@/lib/events";

export const MAX_MESSAGE_CHARS = 4000;

export const customerTextSchema = z
  .string({ error: "The message must be text." })
  .transform((s) => s.replace(/\u0000/g, "").trim())
  .pipe(z.string().min(1, "The message is empty.").max(MAX_MESSAGE_CHARS, `The message is longer than ${MAX_MESSAGE_CHARS} characters.`));

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/**
 * Opens a conversation for a widget visitor. The token is the visitor's only credential (stored hashed).
 * When the shop signed the customer's identity, the conversation starts verified as that customer.
 */
export async function openConversation(db: PrismaTx, a: { tenantId: string; customerId?: string | null; verificationTtlMinutes?: number }) {
  const token = randomBytes(24).toString("base64url");
  const now = new Date();
  const conversation = await db.conversation.create({
    data: {
      tenantId: a.tenantId,
      tokenHash: hashToken(token),
      customerId: a.customerId ?? null,
      ...(a.customerId ? { verifiedCustomerId: a.customerId, verifiedAt: now, verificationExpiresAt: new Date(now.getTime() + (a.verificationTtlMinutes ?? 60) * 60_000) } : {}),
    },
  });
  await publishEvent(db, { tenantId: a.tenantId, conversationId: conversation.id, type: "conversation.created", data: {} });
  return { conversation, token };
}

export type IntakeResult =
  | { kind: "started"; runId: string }
  | { kind: "queued"; runId: string } // a run is busy or parked: the text reaches the model after its results
  | { kind: "to_person" }; // a person owns the conversation: the agent stays silent

/**
 * Receives a customer's message. If the conversation is free, it starts a run (the caller or a worker
 * advances it). If a run is busy or waiting for a person, the text is queued — never appended between a
 * tool_use and its tool_result — and the customer is told honestly what is pending.
 */
export async function receiveCustomerMessage(db: PrismaClient, a: { tenantId: string; conversationId: string; text: unknown; model: string; claimFor?: LeaseClaim }): Promise<IntakeResult> {
  const parsed = customerTextSchema.safeParse(a.text);
  if (!parsed.success) throw new AppError("INVALID_INPUT", parsed.error.issues[0]?.message ?? "Invalid message.");
  const text = parsed.data;

  return db.$transaction(async (tx) => {
    // Lock the conversation: a concurrent message and a finishing run must not both think it is free.
    const [conv] = await tx.$queryRaw<Array<{ id: string; status: string; activeRunId: string | null; customerId: string | null; messageCount: number; policyVersion: number }>>`
      SELECT c.id, c.status::text AS status, c."activeRunId", c."customerId", c."messageCount", t."policyVersion"
      FROM "Conversation" c JOIN "Tenant" t ON t.id = c."tenantId"
      WHERE c.id = ${a.conversationId} AND c."tenantId" = ${a.tenantId} FOR UPDATE OF c`;
    if (!conv) throw new AppError("NOT_FOUND", "This conversation was not found.");
    const base = { tenantId: a.tenantId, conversationId: conv.id, role: "user" as const, author: "CUSTOMER" as const, shownToCustomer: true, displayText: text };

    if (conv.activeRunId) {
      await appendMessage(tx, { ...base, runId: conv.activeRunId, content: [{ type: "text", text }], inTranscript: false, pendingDelivery: true });
      const run = await tx.run.findUniqueOrThrow({ where: { id: conv.activeRunId } });
      if (run.phase === "WAITING_FOR_APPROVAL" && conv.status !== "human") {
        const pending = await tx.handoff.findMany({ where: { runId: run.id, kind: "APPROVAL", status: "PENDING" }, select: { payload: true } });
        const what = pending.map((h) => pendingSubject((h.payload as { toolName?: string }).toolName, h.payload as { orderNumber?: string | null; amountCents?: number | null })).join(" and ");
        await noticeToCustomer(tx, { id: run.id, tenantId: a.tenantId, conversationId: conv.id }, `${what || "Your request"} is still with our team. I've noted your message and will answer it as soon as they decide.`);
      }
      return { kind: "queued", runId: conv.activeRunId };
    }

    if (conv.status === "human") {
      await appendMessage(tx, { ...base, content: [{ type: "text", text }] });
      await publishEvent(tx, { tenantId: a.tenantId, conversationId: conv.id, type: "conversation.customer_message", data: {} });
      return { kind: "to_person" };
    }

    const policy = await loadPolicy(tx, a.tenantId, conv.policyVersion);
    const run = await startRun(tx, { tenantId: a.tenantId, conversationId: conv.id, policy, model: a.model, claimFor: a.claimFor });
    const content: ContentBlock[] = [];
    if (conv.messageCount === 0 && conv.customerId) {
      const customer = await tx.customer.findUnique({ where: { id: conv.customerId } });
      if (customer) content.push({ type: "text", text: `[context] The shop signed this customer in: ${customer.name} <${customer.email}>. Their identity is verified.` });
    }
    content.push({ type: "text", text });
    await appendMessage(tx, { ...base, runId: run.id, content });
    return { kind: "started", runId: run.id };
  });
}
