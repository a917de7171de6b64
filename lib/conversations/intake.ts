// A customer's message arrives. In ONE statement, serialised on the conversation's row: if the conversation is
// free and the agent's, a run starts (leased to the caller, who advances it) with the message; if a run is busy or
// waiting for a person, the text is queued — never appended between a tool_use and its tool_result — and the customer
// is told honestly what is pending; if a person owns the conversation, the text goes to them and the agent stays silent.
import { isWellFormed } from "@/lib/storable-text";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { sql } from "kysely";
import { z } from "zod";
import { storeOf } from "@/lib/db/kysely";
import { promptVersion } from "@/lib/agent/prompt";
import { AppError } from "@/lib/errors";
import { pendingSubject } from "@/lib/handoffs/records";
import type { LeaseClaim } from "@/lib/runtime/advance";
import { loadPolicy } from "@/lib/runtime/policy";
import { type CreatedRun, newRunStateRow } from "@/lib/runtime/run-state";
import { addEvent } from "@/lib/store/events";
import { pendingApprovals } from "@/lib/store/handoffs";
import { conversationSpendSql, shopSpendTodaySql } from "@/lib/store/model-calls";
import { addRun } from "@/lib/store/runs";
import { json, Statement } from "@/lib/store/statement";
import { changeConversation, type ContentBlock, noteCommitted } from "@/lib/store/transcript";
import { toolsVersion } from "@/lib/tools/registry";
import { customerContent, shopContext } from "./customer-text";

export const MAX_MESSAGE_CHARS = 4000;

export const customerTextSchema = z
  .string({ error: "The message must be text." })
  .transform((s) => s.replace(/\u0000/g, "").trim())
  .pipe(z.string().min(1, "The message is empty.").max(MAX_MESSAGE_CHARS, `The message is longer than ${MAX_MESSAGE_CHARS} characters.`))
  // A lone surrogate cannot be stored (jsonb refuses it): refused here for every way in (widget, API, CLI).
  .refine(isWellFormed, "The message contains an invalid character (an unpaired surrogate); send valid Unicode text.");

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/**
 * Opens a conversation for a widget visitor. The token is the visitor's only credential (stored hashed). When the
 * shop signed the customer's identity, the conversation starts verified as that customer, and the model's first
 * message says so (as shop context, in the form customer text cannot take).
 */
export async function openConversation(
  client: object,
  a: {
    tenantId: string;
    customerId?: string | null;
    /** the customer, when the caller has just read it from this shop (instead of `customerId`: it is not read again) */
    customer?: { id: string; name: string; email: string } | null;
    verificationTtlMinutes?: number;
  },
) {
  const db = storeOf(client);
  const token = randomBytes(24).toString("base64url");
  const now = new Date();
  const id = randomUUID();
  const customer =
    a.customer ??
    (a.customerId
      ? await db
          .selectFrom("Customer")
          .select(["id", "name", "email"])
          .where("id", "=", a.customerId)
          .where("tenantId", "=", a.tenantId)
          .executeTakeFirst()
      : null);
  if (a.customerId && !customer) throw new AppError("NOT_FOUND", "This customer was not found.");
  const s = Statement.plain();
  s.insert("created", "Conversation", {
    id,
    tenantId: a.tenantId,
    tokenHash: hashToken(token),
    customerId: customer?.id ?? null,
    updatedAt: now,
    messageCount: customer ? 1 : 0,
    ...(customer
      ? {
          verifiedCustomerId: customer.id,
          verificationLevel: sql`'shop_signed'::"VerificationLevel"`,
          verifiedAt: now,
          verificationExpiresAt: new Date(now.getTime() + (a.verificationTtlMinutes ?? 60) * 60_000),
        }
      : {}),
  });
  if (customer) {
    s.insert(
      "context",
      "Message",
      {
        id: randomUUID(),
        tenantId: a.tenantId,
        conversationId: id,
        seq: 1,
        role: sql`'user'::"MessageRole"`,
        author: sql`'HARNESS'::"MessageAuthor"`,
        content: json([
          {
            type: "text",
            text: shopContext(`The shop signed this customer in: ${customer.name} <${customer.email}>. Their identity is verified.`),
          },
        ]),
      },
      { from: ["created"] },
    );
  }
  addEvent(s, "ev", { tenantId: a.tenantId, conversationId: id, type: "conversation.created" }, { from: ["created"] });
  await s.run(db);
  return { conversation: { id, tenantId: a.tenantId, customerId: customer?.id ?? null }, token };
}

/** What became of a customer's message (stored as message `seq` in every case). */
export type IntakeResult =
  | { kind: "started"; seq: number; runId: string; run: CreatedRun } // the run as created (see advanceRun's `run`)
  | { kind: "queued"; seq: number; runId: string } // a run is busy or parked: the text reaches the model after its results
  | { kind: "to_person"; seq: number }; // a person owns the conversation: the agent stays silent

/**
 * Receives a customer's message (validated first: a bad one is refused with nothing written). Starts a run leased
 * to `claimFor` (the caller advances it), queues the text, or hands it to the person who owns the conversation.
 * `clientIp`: the sender's address, noted on the conversation in the same statement — identity checks count their
 * attempts per address there (lib/identity).
 */
export async function receiveCustomerMessage(
  client: object,
  a: { tenantId: string; conversationId: string; text: unknown; model: string; claimFor?: LeaseClaim; clientIp?: string | null },
): Promise<IntakeResult> {
  const parsed = customerTextSchema.safeParse(a.text);
  if (!parsed.success) throw new AppError("INVALID_INPUT", parsed.error.issues[0]?.message ?? "Invalid message.");
  const text = parsed.data;
  const db = storeOf(client);
  const runId = randomUUID();
  const content: ContentBlock[] = customerContent(text);

  const s = Statement.plain();
  s.select(
    "pol",
    sql`SELECT t."policyVersion" AS version, pv.rules FROM "Tenant" t JOIN "PolicyVersion" pv ON pv."tenantId" = t.id AND pv.version = t."policyVersion" WHERE t.id = ${a.tenantId}`,
  );
  // The conversation's row decides, as it is at the moment of the update (a busy run, a person, or free).
  s.update(
    "conv",
    "Conversation",
    {
      messageCount: sql`"messageCount" + 1`,
      updatedAt: sql`now()`,
      activeRunId: sql`CASE WHEN "activeRunId" IS NULL AND status <> 'human' THEN ${runId} ELSE "activeRunId" END`,
      queuedCount: sql`"queuedCount" + CASE WHEN "activeRunId" IS NOT NULL THEN 1 ELSE 0 END`,
      ...(a.clientIp ? { clientIp: a.clientIp } : {}),
    },
    sql<boolean>`"Conversation".id = ${a.conversationId} AND "Conversation"."tenantId" = ${a.tenantId}`,
    {
      returning: sql`"messageCount", "activeRunId", status::text AS status, ("activeRunId" = ${runId}) AS started,
        "verifiedCustomerId", "verificationExpiresAt", "verificationLevel"::text AS "verificationLevel"`,
    },
  );
  addRun(
    s,
    "run",
    {
      id: runId,
      tenantId: a.tenantId,
      conversationId: a.conversationId,
      policyVersion: sql<number>`pol.version` as unknown as number,
      maxTurns: sql<number>`(pol.rules->'budgets'->>'maxTurns')::int`,
      tokenBudget: sql<number>`(pol.rules->'budgets'->>'tokenBudget')::int`,
      promptVersion,
      toolsVersion,
      model: a.model,
      lease: a.claimFor ? { runId, owner: a.claimFor.workerId, ms: a.claimFor.leaseMs } : null,
    },
    { from: ["conv", "pol"], where: sql<boolean>`conv.started` },
  );
  s.insert(
    "msg",
    "Message",
    {
      id: randomUUID(),
      tenantId: a.tenantId,
      conversationId: a.conversationId,
      runId: sql`conv."activeRunId"`,
      seq: sql`conv."messageCount"`,
      role: sql`'user'::"MessageRole"`,
      author: sql`'CUSTOMER'::"MessageAuthor"`,
      content: json(content),
      // Queued text stays out of the transcript until the results it waited for are appended.
      inTranscript: sql`conv."activeRunId" IS NULL OR conv.started`,
      pendingDelivery: sql`conv."activeRunId" IS NOT NULL AND NOT conv.started`,
      shownToCustomer: true,
      displayText: text,
    },
    { from: ["conv"], returning: sql`seq` },
  );
  addEvent(
    s,
    "msg_ev",
    {
      tenantId: a.tenantId,
      conversationId: a.conversationId,
      type: "message.created",
      data: sql`jsonb_build_object('seq', msg.seq, 'author', 'CUSTOMER')`,
    },
    { from: ["msg"] },
  );
  addEvent(
    s,
    "human_ev",
    { tenantId: a.tenantId, conversationId: a.conversationId, type: "conversation.customer_message", data: {} },
    { from: ["conv"], where: sql<boolean>`conv."activeRunId" IS NULL AND conv.status = 'human'` },
  );
  const row = await s.run<{
    seq: number;
    started: boolean;
    activeRunId: string | null;
    status: string;
    policyVersion: number;
    runPhase: string | null;
    conversationSpend: bigint;
    shopSpend: bigint;
    verifiedCustomerId: string | null;
    verificationExpiresAt: Date | null;
    verificationLevel: string | null;
  }>(
    db,
    sql`msg.seq, conv.started, conv."activeRunId", conv.status, (SELECT version FROM pol) AS "policyVersion",
      conv."verifiedCustomerId", conv."verificationExpiresAt", conv."verificationLevel",
      (SELECT phase::text FROM "Run" WHERE id = conv."activeRunId") AS "runPhase",
      ${conversationSpendSql(a.conversationId)} AS "conversationSpend", ${shopSpendTodaySql(a.tenantId)} AS "shopSpend" FROM msg, conv`,
  );
  if (!row) throw new AppError("NOT_FOUND", "This conversation was not found.");

  if (row.started) {
    // Committed: the process's transcript cache may extend with it (if it knew everything before it).
    noteCommitted(a.conversationId, { seq: row.seq, role: "user", content, author: "CUSTOMER", runId });
    const policy = await loadPolicy(db, a.tenantId, row.policyVersion);
    const state = newRunStateRow({
      id: runId,
      tenantId: a.tenantId,
      conversationId: a.conversationId,
      policy,
      model: a.model,
      spend: { conversation: Number(row.conversationSpend), shopDay: Number(row.shopSpend) },
    });
    const { verifiedCustomerId, verificationExpiresAt, verificationLevel } = row;
    const verification = { verifiedCustomerId, verificationExpiresAt, verificationLevel };
    return { kind: "started", seq: row.seq, runId, run: { state, messageSeq: row.seq, verification } };
  }
  if (row.activeRunId) {
    if (row.runPhase === "WAITING_FOR_APPROVAL" && row.status !== "human")
      await tellWhatWaits(client, a.tenantId, a.conversationId, row.activeRunId);
    // A run dead-lettered with its tool calls unanswered holds the conversation until it is retried (lib/runtime/end).
    if (row.runPhase === "DEAD_LETTER" && row.status !== "human")
      await tell(client, a.tenantId, a.conversationId, row.activeRunId, DEAD_LETTER_HOLDS);
    return { kind: "queued", seq: row.seq, runId: row.activeRunId };
  }
  return { kind: "to_person", seq: row.seq };
}

/** While a run waits for a person, a customer who writes is told honestly what waits (and that their text is kept). */
async function tellWhatWaits(client: object, tenantId: string, conversationId: string, runId: string): Promise<void> {
  const db = storeOf(client);
  const pending = await pendingApprovals(db, runId);
  const what = pending
    .map((h) => {
      const p = h.payload as { toolName?: string; orderNumber?: string | null; amountCents?: number | null };
      return pendingSubject(p.toolName, p);
    })
    .join(" and ");
  await tell(
    client,
    tenantId,
    conversationId,
    runId,
    `${what || "Your request"} is still with our team. I've noted your message and will answer it as soon as they decide.`,
  );
}

const DEAD_LETTER_HOLDS = "Your conversation is with our team, and a person will follow up here. I've noted your message.";

/** A notice to the customer (not part of what the model reads). */
async function tell(client: object, tenantId: string, conversationId: string, runId: string, notice: string): Promise<void> {
  const db = storeOf(client);
  const s = Statement.plain();
  changeConversation(s, {
    conversationId,
    tenantId,
    messages: [
      {
        tenantId,
        conversationId,
        runId,
        role: "assistant",
        author: "HARNESS",
        content: [{ type: "text", text: notice }],
        inTranscript: false,
        shownToCustomer: true,
        displayText: notice,
      },
    ],
  });
  await s.run(db);
}
