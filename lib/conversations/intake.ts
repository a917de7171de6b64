import { createHash, randomBytes, randomUUID } from "node:crypto";
import { z } from "zod";
import { Prisma, type PrismaClient, type PrismaTx } from "@/lib/db/prisma-types";
import { fastSql, sqlTransaction } from "@/lib/db/sql";
import type { Policy } from "@/lib/policy/policy";
import { AppError } from "@/lib/errors";
import { loadPolicy } from "@/lib/runtime/policy";
import { newRunCtes, startRun, noticeToCustomer, type LeaseClaim } from "@/lib/runtime/run-end";
import { appendMessage, noteCommitted, type ContentBlock } from "@/lib/runtime/transcript";
import { newRunStateRow, type CreatedRun } from "@/lib/runtime/run-state";
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
  | { kind: "started"; runId: string; run: CreatedRun } // the run as created (see advanceRun's `run`)
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

  const started = await startRunWithMessage(db, { ...a, text });
  if (started) return started;

  // Everything else (a run is busy or parked, a person owns it, the first message of a signed-in customer, a
  // policy version this process has not seen) in a transaction, on the pg pool directly (see lib/db/sql).
  return sqlTransaction(db, async (sql) => {
    // Lock the conversation: a concurrent message and a finishing run must not both think it is free.
    const [conv] = await sql.query<{ id: string; status: string; activeRunId: string | null; runPhase: string | null; customerId: string | null; customerLine: string | null; messageCount: number; policyVersion: number }>(Prisma.sql`
      SELECT c.id, c.status::text AS status, c."activeRunId", r.phase::text AS "runPhase", c."customerId", c."messageCount", t."policyVersion",
             CASE WHEN cu.id IS NOT NULL THEN cu.name || ' <' || cu.email || '>' END AS "customerLine"
      FROM "Conversation" c JOIN "Tenant" t ON t.id = c."tenantId"
      LEFT JOIN "Run" r ON r.id = c."activeRunId"
      LEFT JOIN "Customer" cu ON cu.id = c."customerId" AND c."messageCount" = 0
      WHERE c.id = ${a.conversationId} AND c."tenantId" = ${a.tenantId} FOR UPDATE OF c`);
    if (!conv) throw new AppError("NOT_FOUND", "This conversation was not found.");
    const base = { tenantId: a.tenantId, conversationId: conv.id, role: "user" as const, author: "CUSTOMER" as const, shownToCustomer: true, displayText: text };

    if (conv.activeRunId) {
      await appendMessage(sql, { ...base, runId: conv.activeRunId, content: [{ type: "text", text }], inTranscript: false, pendingDelivery: true });
      if (conv.runPhase === "WAITING_FOR_APPROVAL" && conv.status !== "human") {
        const pending = await sql.query<{ payload: { toolName?: string; orderNumber?: string | null; amountCents?: number | null } }>(Prisma.sql`
          SELECT payload FROM "Handoff" WHERE "runId" = ${conv.activeRunId} AND kind = 'APPROVAL' AND status = 'PENDING' ORDER BY "createdAt"`);
        const what = pending.map((h) => pendingSubject(h.payload.toolName, h.payload)).join(" and ");
        await noticeToCustomer(sql, { id: conv.activeRunId, tenantId: a.tenantId, conversationId: conv.id }, `${what || "Your request"} is still with our team. I've noted your message and will answer it as soon as they decide.`);
      }
      return { kind: "queued", runId: conv.activeRunId };
    }

    if (conv.status === "human") {
      await appendMessage(sql, { ...base, content: [{ type: "text", text }] });
      await publishEvent(sql, { tenantId: a.tenantId, conversationId: conv.id, type: "conversation.customer_message", data: {} });
      return { kind: "to_person" };
    }

    const policy = await loadPolicy(sql, a.tenantId, conv.policyVersion);
    currentPolicy.set(a.tenantId, policy);
    const run = await startRun(sql, { tenantId: a.tenantId, conversationId: conv.id, policy, model: a.model, claimFor: a.claimFor });
    const content: ContentBlock[] = [];
    if (conv.customerLine) content.push({ type: "text", text: `[context] The shop signed this customer in: ${conv.customerLine}. Their identity is verified.` });
    content.push({ type: "text", text });
    const { seq } = await appendMessage(sql, { ...base, runId: run.id, content });
    return { kind: "started", runId: run.id, run: { state: run.state, messageSeq: seq } };
  });
}

// The tenant's current policy as this process last saw it. Only a hint: the fast path below checks it against the
// tenant's row in the same statement, and a changed version simply takes the transactional path.
const currentPolicy = new Map<string, Policy>();

/**
 * The common case in ONE statement: the conversation is free and the agent's, and the tenant's policy is the one
 * this process knows — the run is started (leased to the caller with `claimFor`), the message appended, both
 * announced. The conversation's row is the lock, as in the transactional path. Null (nothing written) otherwise.
 */
async function startRunWithMessage(db: PrismaClient, a: { tenantId: string; conversationId: string; text: string; model: string; claimFor?: LeaseClaim }): Promise<IntakeResult | null> {
  const policy = currentPolicy.get(a.tenantId);
  if (!policy) return null;
  const runId = randomUUID();
  const content: ContentBlock[] = [{ type: "text", text: a.text }];
  const [row] = await fastSql(db).query<{ seq: number }>(Prisma.sql`
    WITH conv AS (
      UPDATE "Conversation" c SET "activeRunId" = ${runId}, "messageCount" = c."messageCount" + 1, "updatedAt" = now()
      FROM "Tenant" t
      WHERE c.id = ${a.conversationId} AND c."tenantId" = ${a.tenantId} AND t.id = c."tenantId" AND t."policyVersion" = ${policy.version}
        AND c."activeRunId" IS NULL AND c.status <> 'human' AND (c."messageCount" > 0 OR c."customerId" IS NULL)
      RETURNING c."messageCount"
    ), ${newRunCtes(runId, { tenantId: a.tenantId, conversationId: a.conversationId, policy, model: a.model, claimFor: a.claimFor }, Prisma.sql`conv`)},
    msg AS (
      INSERT INTO "Message" (id, "tenantId", "conversationId", "runId", seq, role, author, content, "inTranscript", "shownToCustomer", "displayText")
      SELECT ${randomUUID()}, ${a.tenantId}, ${a.conversationId}, r.id, conv."messageCount", 'user', 'CUSTOMER', ${JSON.stringify(content)}::jsonb, true, true, ${a.text}
      FROM conv, r RETURNING seq
    ), ev AS (
      INSERT INTO "Event" ("tenantId", "conversationId", type, data)
      SELECT ${a.tenantId}, ${a.conversationId}, 'message.created', jsonb_build_object('seq', msg.seq, 'author', 'CUSTOMER') FROM msg
    )
    SELECT seq FROM msg`);
  if (!row) return null;
  // Committed: the process's transcript cache may extend with it (if it knew everything before it).
  noteCommitted(a.conversationId, { seq: row.seq, role: "user", content, author: "CUSTOMER", runId });
  return { kind: "started", runId, run: { state: newRunStateRow({ id: runId, tenantId: a.tenantId, conversationId: a.conversationId, policy, model: a.model }), messageSeq: row.seq } };
}
