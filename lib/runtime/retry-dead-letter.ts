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
//
// A held dead letter is also put back, by anyone, when the person who took its conversation over hands it back to the
// agent (`retryOnHandBack`): handing back means "the agent carries on", and the run is what it carries on with.
import { sql, type Transaction } from "kysely";
import { SUPERVISOR_ROLES, type StaffRole } from "@/lib/auth/claims";
import type { DB, Store } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { addAudit } from "@/lib/store/audit";
import { addEvent } from "@/lib/store/events";
import { assertHandoffTransition, assertRunTransition } from "@/lib/store/phases";
import { type Sql, Statement } from "@/lib/store/statement";

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
  addRetryWrites(s, actor, {
    runId,
    previousOutcome: before.outcome,
    claim: opts.claim,
    from: ["dead", "conv"],
    where: sql<boolean>`"Run".id = dead.id AND "Run".phase = 'DEAD_LETTER'`,
  });
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

/**
 * A dead letter its conversation waited for (its tool calls unanswered), put back for the worker by the person who
 * hands the conversation back to the agent — in the hand-back's transaction, under its lock of the conversation's
 * row (lib/conversations/takeover). Without it the customer's next messages would queue behind a stopped run that
 * nobody is asked to retry: the takeover resolved the escalation the dead letter opened. Returns whether it did.
 */
export async function retryOnHandBack(
  tx: Transaction<DB>,
  actor: { tenantId: string; staffId: string; email: string },
  runId: string,
): Promise<boolean> {
  const run = await tx
    .selectFrom("Run")
    .select(["phase", "outcome"])
    .where("id", "=", runId)
    .where("tenantId", "=", actor.tenantId)
    .forUpdate()
    .executeTakeFirst();
  if (run?.phase !== "DEAD_LETTER") return false;
  const s = Statement.plain();
  addRetryWrites(s, actor, {
    runId,
    previousOutcome: run.outcome,
    why: "handed_back",
    where: sql<boolean>`"Run".id = ${runId} AND "Run".phase = 'DEAD_LETTER'`,
  });
  await s.run(tx);
  return true;
}

/**
 * A retry's writes: the run back to RUNNING with a fresh request budget (leased to `claim`, or to no one: the worker's
 * NOTIFY), the escalations it opened resolved by the retrier, the audit record and the feed event naming them.
 */
function addRetryWrites(
  s: Statement,
  actor: { tenantId: string; staffId: string; email: string },
  r: {
    runId: string;
    previousOutcome: string | null;
    claim?: { workerId: string; leaseMs: number };
    why?: string;
    /** the run: its id and still DEAD_LETTER (the CTEs it reads `from`, if any) */
    where: Sql<boolean>;
    from?: string[];
  },
): void {
  assertRunTransition("DEAD_LETTER", "RUNNING");
  assertHandoffTransition("PENDING", "RESOLVED");
  s.update(
    "run",
    "Run",
    {
      phase: sql`'RUNNING'::"RunPhase"`,
      endedAt: null,
      outcome: null,
      requestAttempts: 0,
      nextAttemptAt: null,
      leaseOwner: r.claim?.workerId ?? null,
      leaseExpiresAt: r.claim ? sql`now() + make_interval(secs => ${r.claim.leaseMs / 1000}::float8)` : null,
      updatedAt: sql`now()`,
    },
    r.where,
    { from: r.from, returning: sql`"Run".id, "Run"."conversationId"` },
  );
  s.update(
    "esc",
    "Handoff",
    {
      status: sql`'RESOLVED'::"HandoffStatus"`,
      decision: "retried",
      decisionReason:
        r.why === "handed_back" ? "The run was put back when the conversation was handed back." : "A supervisor retried the run.",
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
      runId: r.runId,
      actor: actor.email,
      action: "run.retried",
      subject: r.runId,
      data: { staffId: actor.staffId, previousOutcome: r.previousOutcome, ...(r.why ? { why: r.why } : {}) },
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
}
