import type { PrismaTx } from "@/lib/db/prisma-types";
import type { Policy } from "@/lib/policy/policy";
import { promptVersion } from "@/lib/agent/prompt";
import { toolsVersion } from "@/lib/tools/registry";
import { openEscalation } from "@/lib/handoffs/escalation";
import { randomUUID } from "node:crypto";
import { appendMessage, type ContentBlock } from "./transcript";
import type { RunRef } from "./tool-gating";


/** A lease taken by the caller at creation or resume: it advances the run itself; if it dies, the lease expires. */
export interface LeaseClaim {
  workerId: string;
  leaseMs: number;
}

/**
 * Creates a run for a conversation and makes it the conversation's one active run. The conditional update
 * is the lock: if another run is active, this returns null and the caller queues the customer's text instead.
 */
export async function startRun(tx: PrismaTx, a: { tenantId: string; conversationId: string; policy: Policy; model: string; claimFor?: LeaseClaim }) {
  const b = a.policy.rules.budgets;
  const id = randomUUID();
  // One statement: the run, the conversation's lock on it, and the event. No row comes back when the
  // conversation already has an active run, and then nothing of it is written.
  const rows = await tx.$queryRaw<Array<{ id: string }>>`
    WITH c AS (
      UPDATE "Conversation" SET "activeRunId" = ${id}, "updatedAt" = now()
      WHERE id = ${a.conversationId} AND "activeRunId" IS NULL RETURNING id
    ), r AS (
      INSERT INTO "Run" (id, "tenantId", "conversationId", "maxTurns", "tokenBudget", "policyVersion", "promptVersion", "toolsVersion", model, "leaseOwner", "leaseExpiresAt", "updatedAt")
      SELECT ${id}, ${a.tenantId}, ${a.conversationId}, ${b.maxTurns}, ${b.tokenBudget}, ${a.policy.version}, ${promptVersion}, ${toolsVersion}, ${a.model},
             ${a.claimFor?.workerId ?? null}, CASE WHEN ${!!a.claimFor}::boolean THEN now() + make_interval(secs => ${(a.claimFor?.leaseMs ?? 0) / 1000}::float8) END, now()
      FROM c RETURNING id
    ), e AS (
      INSERT INTO "Event" ("tenantId", "conversationId", type, data)
      SELECT ${a.tenantId}, ${a.conversationId}, 'run.started', jsonb_build_object('runId', r.id) FROM r
    )
    SELECT id FROM r`;
  if (!rows.length) throw new Error("conversation already has an active run");
  return { id };
}

/**
 * Ends a run (COMPLETED, ESCALATED or DEAD_LETTER): releases its lease and the conversation. If the customer
 * wrote while it was busy, their text starts the next run at once, so nothing they said is lost.
 * Returns the follow-up run's id, if any.
 */
export async function finishRun(tx: PrismaTx, run: RunRef, phase: "COMPLETED" | "ESCALATED" | "DEAD_LETTER", outcome: string, model: string, policy: Policy): Promise<string | null> {
  // One statement: end the run, free the conversation, announce it, and see whether text is queued.
  const [{ queued: queuedCount } = { queued: 0 }] = await tx.$queryRaw<Array<{ queued: number }>>`
    WITH r AS (
      UPDATE "Run" SET phase = ${phase}::"RunPhase", outcome = ${outcome}, "endedAt" = now(), "leaseOwner" = NULL, "leaseExpiresAt" = NULL, "nextAttemptAt" = NULL, "updatedAt" = now()
      WHERE id = ${run.id} RETURNING id
    ), c AS (
      UPDATE "Conversation" SET "activeRunId" = NULL, "updatedAt" = now() WHERE id = ${run.conversationId} AND "activeRunId" = ${run.id} RETURNING id
    ), e AS (
      INSERT INTO "Event" ("tenantId", "conversationId", type, data)
      VALUES (${run.tenantId}, ${run.conversationId}, 'run.phase', jsonb_build_object('runId', ${run.id}::text, 'phase', ${phase}::text))
    )
    SELECT count(*)::int AS queued FROM "Message" WHERE "conversationId" = ${run.conversationId} AND "pendingDelivery"`;
  if (!queuedCount) return null;
  const queued = await tx.message.findMany({ where: { conversationId: run.conversationId, pendingDelivery: true }, orderBy: { seq: "asc" } });
  const conversation = await tx.conversation.findUniqueOrThrow({ where: { id: run.conversationId } });
  const content: ContentBlock[] = queued.map((q) => ({ type: "text", text: q.displayText ?? "" }));
  // A person owns the conversation: the text joins the transcript for later, but no run answers it.
  const next = conversation.status === "human" ? null : await startRun(tx, { tenantId: run.tenantId, conversationId: run.conversationId, policy, model });
  await tx.message.updateMany({ where: { id: { in: queued.map((q) => q.id) } }, data: { pendingDelivery: false, runId: next?.id ?? run.id } });
  await appendMessage(tx, { tenantId: run.tenantId, conversationId: run.conversationId, runId: next?.id ?? run.id, role: "user", author: "HARNESS", content });
  return next?.id ?? null;
}

/** A message from the support system to the customer (not part of what the model sees). */
export async function noticeToCustomer(tx: PrismaTx, run: RunRef, text: string) {
  await appendMessage(tx, { tenantId: run.tenantId, conversationId: run.conversationId, runId: run.id, role: "assistant", author: "HARNESS", content: [{ type: "text", text }], inTranscript: false, shownToCustomer: true, displayText: text });
}

export const HONEST_HANDOFF_NOTICE = "I'm sorry — I couldn't finish this on my own. I've passed your conversation to our team with a summary, and a person will follow up here.";

/**
 * Degrades gracefully when the run cannot go on (budget, refusal, truncation, an unknown stop reason, a dead
 * model): opens a self-contained escalation written by code, tells the customer honestly, ends the run.
 */
export async function escalateRun(
  tx: PrismaTx,
  run: RunRef,
  a: { trigger: string; reason: string; rootCause: string; notice?: string; phase?: "ESCALATED" | "DEAD_LETTER"; model: string; policy: Policy },
): Promise<string | null> {
  await openEscalation(tx, {
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
