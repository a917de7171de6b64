import { Prisma } from "@/lib/db/prisma-types";
import { prismaOf, sqlOf, type Db } from "@/lib/db/sql";
import type { Policy } from "@/lib/policy/policy";
import { promptVersion } from "@/lib/agent/prompt";
import { toolsVersion } from "@/lib/tools/registry";
import { openEscalation } from "@/lib/handoffs/escalation";
import { randomUUID } from "node:crypto";
import { appendMessage, type ContentBlock } from "./transcript";
import { countersSql, type RunCounters } from "./lease";
import { newRunStateRow } from "./run-state";
import type { RunRef } from "./tool-gating";


/** A lease taken by the caller at creation or resume: it advances the run itself; if it dies, the lease expires. */
export interface LeaseClaim {
  workerId: string;
  leaseMs: number;
}

export interface NewRun {
  tenantId: string;
  conversationId: string;
  policy: Policy;
  model: string;
  claimFor?: LeaseClaim;
}

/**
 * The CTEs creating a run (`r`) and announcing it (`e`), for each row of `from` — a CTE that has just made the
 * run the conversation's active one (so no row: no run).
 */
export function newRunCtes(id: string, a: NewRun, from: Prisma.Sql): Prisma.Sql {
  const b = a.policy.rules.budgets;
  return Prisma.sql`
    r AS (
      INSERT INTO "Run" (id, "tenantId", "conversationId", "maxTurns", "tokenBudget", "policyVersion", "promptVersion", "toolsVersion", model, "leaseOwner", "leaseExpiresAt", "updatedAt")
      SELECT ${id}, ${a.tenantId}, ${a.conversationId}, ${b.maxTurns}, ${b.tokenBudget}, ${a.policy.version}, ${promptVersion}, ${toolsVersion}, ${a.model},
             ${a.claimFor?.workerId ?? null}, CASE WHEN ${!!a.claimFor}::boolean THEN now() + make_interval(secs => ${(a.claimFor?.leaseMs ?? 0) / 1000}::float8) END, now()
      FROM ${from} RETURNING id
    ), e AS (
      INSERT INTO "Event" ("tenantId", "conversationId", type, data)
      SELECT ${a.tenantId}, ${a.conversationId}, 'run.started', jsonb_build_object('runId', r.id) FROM r
    )`;
}

/**
 * Creates a run for a conversation and makes it the conversation's one active run. The conditional update
 * is the lock: if another run is active, this returns null and the caller queues the customer's text instead.
 */
export async function startRun(tx: Db, a: NewRun) {
  const id = randomUUID();
  // One statement: the run, the conversation's lock on it, and the event. No row comes back when the
  // conversation already has an active run, and then nothing of it is written.
  const rows = await sqlOf(tx).query<{ id: string }>(Prisma.sql`
    WITH c AS (
      UPDATE "Conversation" SET "activeRunId" = ${id}, "updatedAt" = now()
      WHERE id = ${a.conversationId} AND "activeRunId" IS NULL RETURNING id
    ), ${newRunCtes(id, a, Prisma.sql`c`)}
    SELECT id FROM r`);
  if (!rows.length) throw new Error("conversation already has an active run");
  return { id, state: newRunStateRow({ id, ...a }) };
}

/**
 * Ends a run (COMPLETED, ESCALATED or DEAD_LETTER): releases its lease and the conversation. If the customer
 * wrote while it was busy, their text starts the next run at once, so nothing they said is lost.
 * Returns the follow-up run's id, if any.
 */
export async function finishRun(tx: Db, run: RunRef, phase: "COMPLETED" | "ESCALATED" | "DEAD_LETTER", outcome: string, model: string, policy: Policy): Promise<string | null> {
  const sql = sqlOf(tx);
  // One statement: end the run, free the conversation, announce it, and see whether text is queued.
  const [{ queued: queuedCount } = { queued: 0 }] = await sql.query<{ queued: number }>(Prisma.sql`
    WITH r AS (
      UPDATE "Run" SET phase = ${phase}::"RunPhase", outcome = ${outcome}, "endedAt" = now(), "leaseOwner" = NULL, "leaseExpiresAt" = NULL, "nextAttemptAt" = NULL, "updatedAt" = now()
      WHERE id = ${run.id} RETURNING id
    ), c AS (
      UPDATE "Conversation" SET "activeRunId" = NULL, "updatedAt" = now() WHERE id = ${run.conversationId} AND "activeRunId" = ${run.id} RETURNING id
    ), e AS (
      INSERT INTO "Event" ("tenantId", "conversationId", type, data)
      VALUES (${run.tenantId}, ${run.conversationId}, 'run.phase', jsonb_build_object('runId', ${run.id}::text, 'phase', ${phase}::text))
    )
    SELECT count(*)::int AS queued FROM "Message" WHERE "conversationId" = ${run.conversationId} AND "pendingDelivery"`);
  if (!queuedCount) return null;
  const queued = await sql.query<{ id: string; displayText: string | null }>(Prisma.sql`
    SELECT id, "displayText" FROM "Message" WHERE "conversationId" = ${run.conversationId} AND "pendingDelivery" ORDER BY seq`);
  const [conversation] = await sql.query<{ status: string }>(Prisma.sql`SELECT status::text AS status FROM "Conversation" WHERE id = ${run.conversationId}`);
  const content: ContentBlock[] = queued.map((q) => ({ type: "text", text: q.displayText ?? "" }));
  // A person owns the conversation: the text joins the transcript for later, but no run answers it.
  const next = conversation?.status === "human" ? null : await startRun(tx, { tenantId: run.tenantId, conversationId: run.conversationId, policy, model });
  await sql.execute(Prisma.sql`
    UPDATE "Message" SET "pendingDelivery" = false, "runId" = ${next?.id ?? run.id} WHERE id IN (${Prisma.join(queued.map((q) => q.id))})`);
  await appendMessage(tx, { tenantId: run.tenantId, conversationId: run.conversationId, runId: next?.id ?? run.id, role: "user", author: "HARNESS", content });
  return next?.id ?? null;
}

/**
 * The common end of a run, in ONE statement: the model's final reply is appended (shown unless a person owns the
 * conversation — checked on the row as it is written), its model call recorded, the run completed with its
 * counters, the lease and the conversation released, and both announced. It applies only if this worker still
 * holds the lease (the run's row is locked first), no customer text waits to be delivered, and nothing was added
 * to the conversation since the statement's snapshot (its message count, re-checked on the locked row). Returns
 * the reply's seq; null, having written nothing, otherwise — the caller then takes the transactional path.
 */
export async function completeRunWithReply(db: Db, run: RunRef, a: {
  owner: string; counters: RunCounters; reply: ContentBlock[]; text: string; modelCall: (from: Prisma.Sql) => Prisma.Sql;
}): Promise<{ seq: number } | null> {
  const [row] = await sqlOf(db).query<{ seq: number }>(Prisma.sql`
    WITH lease AS (
      SELECT id FROM "Run" WHERE id = ${run.id} AND "leaseOwner" = ${a.owner} FOR UPDATE
    ), seen AS (
      SELECT "messageCount" FROM "Conversation"
      WHERE id = ${run.conversationId} AND NOT EXISTS (SELECT 1 FROM "Message" WHERE "conversationId" = ${run.conversationId} AND "pendingDelivery")
    ), c AS (
      UPDATE "Conversation" SET "messageCount" = "Conversation"."messageCount" + 1, "activeRunId" = NULL, "updatedAt" = now()
      FROM lease, seen
      WHERE "Conversation".id = ${run.conversationId} AND "activeRunId" = ${run.id} AND "Conversation"."messageCount" = seen."messageCount"
      RETURNING "Conversation"."messageCount", status <> 'human' AS shown
    ), r AS (
      UPDATE "Run" SET phase = 'COMPLETED', "endedAt" = now(), "leaseOwner" = NULL, "leaseExpiresAt" = NULL, "nextAttemptAt" = NULL,
             outcome = CASE WHEN c.shown THEN 'end_turn' ELSE 'end_turn (suppressed: a person owns the conversation)' END,
             ${countersSql(a.counters)}
      FROM c WHERE "Run".id = ${run.id} RETURNING "Run".id
    ), mc AS (
      ${a.modelCall(Prisma.sql`FROM r`)}
    ), msg AS (
      INSERT INTO "Message" (id, "tenantId", "conversationId", "runId", seq, role, author, content, "inTranscript", "shownToCustomer", "displayText")
      SELECT ${randomUUID()}, ${run.tenantId}, ${run.conversationId}, ${run.id}, c."messageCount", 'assistant', 'AGENT', ${JSON.stringify(a.reply)}::jsonb, true, c.shown,
             CASE WHEN c.shown THEN ${a.text} END
      FROM c, r RETURNING seq, "shownToCustomer"
    ), ev AS (
      INSERT INTO "Event" ("tenantId", "conversationId", type, data)
      SELECT ${run.tenantId}, ${run.conversationId}, 'message.created', jsonb_build_object('seq', msg.seq, 'author', 'AGENT') FROM msg WHERE msg."shownToCustomer"
      UNION ALL
      SELECT ${run.tenantId}, ${run.conversationId}, 'run.phase', jsonb_build_object('runId', r.id, 'phase', 'COMPLETED') FROM r
    )
    SELECT seq FROM msg`);
  return row ?? null;
}

/** A message from the support system to the customer (not part of what the model sees). */
export async function noticeToCustomer(tx: Db, run: RunRef, text: string) {
  await appendMessage(tx, { tenantId: run.tenantId, conversationId: run.conversationId, runId: run.id, role: "assistant", author: "HARNESS", content: [{ type: "text", text }], inTranscript: false, shownToCustomer: true, displayText: text });
}

export const HONEST_HANDOFF_NOTICE = "I'm sorry — I couldn't finish this on my own. I've passed your conversation to our team with a summary, and a person will follow up here.";

/**
 * Degrades gracefully when the run cannot go on (budget, refusal, truncation, an unknown stop reason, a dead
 * model): opens a self-contained escalation written by code, tells the customer honestly, ends the run.
 */
export async function escalateRun(
  tx: Db,
  run: RunRef,
  a: { trigger: string; reason: string; rootCause: string; notice?: string; phase?: "ESCALATED" | "DEAD_LETTER"; model: string; policy: Policy },
): Promise<string | null> {
  // Opening a handoff uses Prisma's models: on the fast path this step is redone in a Prisma transaction.
  await openEscalation(prismaOf(tx), {
    tenantId: run.tenantId,
    conversationId: run.conversationId,
    runId: run.id,
    trigger: a.trigger,
    rootCause: a.rootCause,
    recommendedAction: "Read the summary, take over the conversation and finish the customer's request.",
    reason: a.reason,
  });
  await noticeToCustomer(tx, run, a.notice ?? HONEST_HANDOFF_NOTICE);
  return finishRun(tx, run, a.phase ?? "ESCALATED", `${a.trigger}: ${a.reason}`, a.model, a.policy);
}
