// RETRY — a supervisor puts a dead-lettered run back for the worker (DESIGN §2.4: exhausted → DEAD_LETTER, visible,
// retryable). One statement: the run goes DEAD_LETTER → RUNNING (checked in lib/store/phases) with a fresh request
// budget and no lease, the conversation is handed back to it (or kept: a run dead-lettered with its tool calls
// unanswered holds it, lib/runtime/end `holdConversation`), the escalation the dead letter opened is resolved by
// the person who retried, and the audit record and the feed event name them. The run then continues from its
// transcript like any other advance (nextStep reads what it needs: the model's turn after the recorded results).
//
// Refusals: a reviewer (FORBIDDEN); another shop's or an unknown run (NOT_FOUND); a run that is not (or no longer)
// a dead letter — a second retry, even a concurrent one, finds it RUNNING (CONFLICT); a conversation a person owns,
// or one another run is advancing (CONVERSATION_OWNED / CONFLICT). Nothing is written when refused.
import { sql } from "kysely";
import { SUPERVISOR_ROLES, type StaffRole } from "@/lib/auth/claims";
import type { Store } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { addAudit } from "@/lib/store/audit";
import { addEvent } from "@/lib/store/events";
import { assertHandoffTransition, assertRunTransition } from "@/lib/store/phases";
import { Statement } from "@/lib/store/statement";

export interface RetryActor {
  tenantId: string;
  staffId: string;
  role: StaffRole;
  email: string;
}

export interface RetriedRun {
  runId: string;
  conversationId: string;
  /** escalation handoffs the retry resolved */
  resolvedHandoffs: string[];
}

/** Puts a dead-lettered run back to RUNNING for the worker; see the file comment for what it writes and refuses. */
export async function retryDeadLetter(
  db: Store,
  actor: RetryActor,
  runId: string,
  /** the retrier's lease (lib/runtime/advance claimFor): taken in the same commit, so no worker takes the run in between */
  opts: { claim?: { workerId: string; leaseMs: number } } = {},
): Promise<RetriedRun> {
  if (!SUPERVISOR_ROLES.includes(actor.role)) throw new AppError("FORBIDDEN", "Only supervisors and admins can retry a dead-lettered run.");
  assertRunTransition("DEAD_LETTER", "RUNNING");
  assertHandoffTransition("PENDING", "RESOLVED");

  const before = await db
    .selectFrom("Run")
    .select(["phase", "outcome"])
    .where("id", "=", runId)
    .where("tenantId", "=", actor.tenantId)
    .executeTakeFirst();
  if (!before) throw new AppError("NOT_FOUND", "This run was not found.");

  const s = Statement.plain();
  // The row lock serialises concurrent retries: the second one re-reads the phase after the first commits and
  // finds RUNNING, so it matches nothing.
  s.select(
    "dead",
    sql`SELECT id, "conversationId", outcome FROM "Run"
        WHERE id = ${runId} AND "tenantId" = ${actor.tenantId} AND phase = 'DEAD_LETTER' FOR UPDATE`,
  );
  s.update(
    "conv",
    "Conversation",
    {
      activeRunId: sql`dead.id`,
      status: sql`CASE WHEN "Conversation".status = 'escalated' THEN 'open'::"ConversationStatus" ELSE "Conversation".status END`,
      updatedAt: sql`now()`,
    },
    sql<boolean>`"Conversation".id = dead."conversationId" AND "Conversation"."tenantId" = ${actor.tenantId}
      AND ("Conversation"."activeRunId" IS NULL OR "Conversation"."activeRunId" = dead.id) AND "Conversation".status <> 'human'`,
    { from: ["dead"], returning: sql`"Conversation".id` },
  );
  s.update(
    "run",
    "Run",
    {
      phase: sql`'RUNNING'::"RunPhase"`,
      endedAt: null,
      outcome: null,
      requestAttempts: 0,
      nextAttemptAt: null,
      leaseOwner: opts.claim?.workerId ?? null,
      leaseExpiresAt: opts.claim ? sql`now() + make_interval(secs => ${opts.claim.leaseMs / 1000}::float8)` : null,
      updatedAt: sql`now()`,
    },
    sql<boolean>`"Run".id = dead.id AND "Run".phase = 'DEAD_LETTER'`,
    { from: ["dead", "conv"], returning: sql`"Run".id, "Run"."conversationId"` },
  );
  s.update(
    "esc",
    "Handoff",
    {
      status: sql`'RESOLVED'::"HandoffStatus"`,
      decision: "retried",
      decisionReason: "A supervisor retried the run.",
      decidedById: actor.staffId,
      decidedAt: sql`now()`,
      version: sql`"Handoff".version + 1`,
      updatedAt: sql`now()`,
    },
    sql<boolean>`"Handoff"."runId" = run.id AND "Handoff".kind = 'ESCALATION' AND "Handoff".status = 'PENDING'`,
    { from: ["run"], returning: sql`"Handoff".id` },
  );
  addAudit(
    s,
    "audit",
    {
      tenantId: actor.tenantId,
      runId,
      actor: actor.email,
      action: "run.retried",
      subject: runId,
      data: { staffId: actor.staffId, previousOutcome: before?.outcome ?? null },
    },
    { from: ["run"] },
  );
  addEvent(
    s,
    "ev",
    {
      tenantId: actor.tenantId,
      conversationId: sql`run."conversationId"`,
      type: "run.phase",
      data: sql`jsonb_build_object('runId', run.id, 'phase', 'RUNNING', 'retriedBy', ${actor.staffId}::text)`,
    },
    { from: ["run"] },
  );
  const row = await s.run<{ found: number; retried: number; conversationId: string | null; resolved: string[] }>(
    db,
    sql`(SELECT count(*)::int FROM dead) AS found, (SELECT count(*)::int FROM run) AS retried,
        (SELECT "conversationId" FROM run) AS "conversationId",
        (SELECT coalesce(array_agg(id), '{}') FROM esc) AS resolved,
        (SELECT count(*) FROM audit) + (SELECT count(*) FROM ev) AS written`,
  );
  if (row?.retried === 1 && row.conversationId) return { runId, conversationId: row.conversationId, resolvedHandoffs: row.resolved };
  if (row?.found === 1) {
    // The run is a dead letter but its conversation cannot take it back.
    const conv = await db
      .selectFrom("Run")
      .innerJoin("Conversation", "Conversation.id", "Run.conversationId")
      .select(["Conversation.status", "Conversation.activeRunId"])
      .where("Run.id", "=", runId)
      .executeTakeFirst();
    if (conv?.status === "human")
      throw new AppError("CONVERSATION_OWNED", "A person has taken this conversation over; the agent cannot pick it up again.");
    throw new AppError("CONFLICT", "The conversation has moved on: another run is answering it now.");
  }
  const run = await db.selectFrom("Run").select(["phase"]).where("id", "=", runId).executeTakeFirstOrThrow();
  throw new AppError(
    "CONFLICT",
    `This run is not a dead letter any more (it is ${run.phase.toLowerCase().replace(/_/g, " ")}); it was already retried.`,
    {
      phase: run.phase,
    },
  );
}
