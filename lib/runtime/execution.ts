// Running an approved call exactly once. A side effect runs inside a transaction fenced by the run's lease, under the
// call's idempotency key: the effect, the provider's record, the ledger row and the call's outcome commit together,
// so a crash leaves all or none and a rerun (another worker, a replayed approval) returns the recorded outcome.
// Other calls only read (or learn something the step that records their result writes, e.g. a verified identity).
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { connectivityFailureKind } from "@/lib/db/outage";
import { ProviderAnswerLostError, ProviderTransientError } from "@/lib/commerce/provider";
import { formatCents } from "@/lib/money";
import { addAudit } from "@/lib/store/audit";
import { recordedOutcomeSql } from "@/lib/store/effects";
import { approvalStands } from "@/lib/store/handoffs";
import { type FencedTx, withLease } from "@/lib/store/lease";
import type { CallSettlement, ToolCallRow } from "@/lib/store/tool-calls";
import { settleCall } from "@/lib/store/tool-calls";
import { type Sql, Statement } from "@/lib/store/statement";
import { getTool } from "@/lib/tools/registry";
import { type EscalationRequest, ToolError, type ToolErrorBody } from "@/lib/tools/types";
import { JudgedAgain, judgeAgainWhereItActs } from "./judged-again";
import type { RuntimeDeps } from "./deps";
import { failpoint } from "./failpoints";
import { readVerification, type Verification } from "./gating";
import { backoffMs } from "./retry";
import type { CallToPark } from "./park";
import type { RunState } from "./run-state";
import type { StepOutcome } from "./step";
import type { StepWrite } from "./step-write";
import { redact } from "./tool-hooks";
import { setting } from "@/lib/env";
import { log } from "@/lib/log";

/** A call to run: its row as recorded (or as just gated). */
export type RunnableCall = Pick<
  ToolCallRow,
  | "id"
  | "toolUseId"
  | "name"
  | "input"
  | "effectiveInput"
  | "status"
  | "idempotencyKey"
  | "attempts"
  | "review"
  | "decidedById"
  | "messageSeq"
  | "scope"
> & { /** the row a lookup's gates read in this advance (ToolDefinition `factsWithRead`) */ gatesRead?: unknown };

export interface Execution {
  settled: CallSettlement & { nextAttemptAt: Date | null };
  /** the outcome is already committed (a side effect's transaction wrote it); otherwise the caller writes it */
  written: boolean;
  /** working time to count with the outcome */
  activeMs: number;
  /** the call handed the conversation to a person: the escalation to open with its result */
  escalation: EscalationRequest | null;
  /**
   * The call is not finished: a specialist it runs (./agent-as-tool) waits — for a person (the approvals to open with
   * the step) or for a retry. The call itself stays APPROVED and runs again when the run continues.
   */
  waitsFor?: { toPark: CallToPark[] } | { retryAt: Date };
  /** writes that must commit with the step recording this outcome (a specialist's last step) */
  write?: StepWrite;
  /** `commitWith` wrote the rest of the step in the effect's transaction: what that step decided */
  finished?: StepOutcome;
}

/**
 * The rest of the step, written in a successful side effect's own transaction (so the effect, its ledger row, the
 * call's outcome and the tool_result message take one commit): given the transaction and the outcome to record
 * (the callback writes the call's outcome and counts `activeMs`); returns the step's outcome. Its last statement
 * may take the transaction's COMMIT with it (`runThenCommit`): nothing is sent on `tx` after the callback.
 */
export type CommitWith = (tx: FencedTx, outcome: Execution["settled"], activeMs: number) => Promise<StepOutcome>;

/**
 * What a side effect checks before it acts, read by its transaction's first statement (the lease renewal) rather
 * than before the transaction: the conversation's verification, whether the person who approved the call still
 * has access to the shop (`approverActive`) and with what authority, and — for the provider, which would otherwise
 * read it in a round trip of its own — what it recorded under the call's idempotency key. The renewal row-locks the
 * run, so nobody else can perform this call's effect between that read and the effect.
 */
interface EffectChecks extends Verification {
  approverActive: boolean;
  approverLimitCents: number | null;
  /** an approved call parked by a handoff: the approvals it needed, and those that still stand */
  requiredApprovals?: number | null;
  standingApprovals?: number;
  /** a side effect: the provider's record under the call's key (lib/store/effects `recordedOutcomeSql`) */
  recordedOutcome?: Record<string, unknown> | null;
  /** a side effect with `effectRead`: its answer */
  effectRead?: unknown;
}

function effectChecksSql(state: RunState, call: RunnableCall, sideEffect: boolean, effectRead: Sql | null): Sql {
  const conversation = (column: string) =>
    sql`(SELECT c.${sql.ref(column)} FROM "Conversation" c WHERE c.id = ${state.ref.conversationId}) AS ${sql.ref(column)}`;
  const approver = sql`FROM "StaffUser" s WHERE s.id = ${call.decidedById} AND s."tenantId" = ${state.ref.tenantId} AND s."deactivatedAt" IS NULL`;
  return sql.join([
    conversation("verifiedCustomerId"),
    conversation("verificationExpiresAt"),
    sql`(SELECT c."verificationLevel"::text FROM "Conversation" c WHERE c.id = ${state.ref.conversationId}) AS "verificationLevel"`,
    sql`EXISTS (SELECT 1 ${approver}) AS "approverActive"`,
    sql`(SELECT s."authorityLimitCents" ${approver}) AS "approverLimitCents"`,
    ...(call.decidedById ? approvalsOfHandoffSql(call.id) : []),
    ...(sideEffect ? [recordedOutcomeSql(state.ref.tenantId, call.idempotencyKey ?? call.id)] : []),
    ...(effectRead ? [sql`${effectRead} AS "effectRead"`] : []),
  ]);
}

/**
 * The approvals of the handoff that parked the call (none: not parked, e.g. a dead-lettered call a person retried):
 * how many it needed, and how many still stand (lib/store/handoffs `approvalStands`) — four eyes hold when it runs.
 */
function approvalsOfHandoffSql(callId: string): Sql[] {
  const handoff = sql`FROM "Handoff" h WHERE h."toolCallId" = ${callId} AND h.kind = 'APPROVAL'`;
  return [
    sql`(SELECT h."requiredApprovals" ${handoff}) AS "requiredApprovals"`,
    sql`(SELECT count(*)::int FROM "Handoff" h JOIN "HandoffApproval" a ON a."handoffId" = h.id JOIN "StaffUser" s ON s.id = a."staffId"
         WHERE h."toolCallId" = ${callId} AND h.kind = 'APPROVAL'
           AND ${approvalStands({ tenantId: sql.ref("h.tenantId"), amountCents: sql.ref("h.amountCents") })}) AS "standingApprovals"`,
  ];
}

/** Why an approved call may no longer run: an approver lost access or authority between deciding and resuming. */
function approverRevoked(checks: EffectChecks, call: RunnableCall): string | null {
  if (!call.decidedById) return null;
  const amount = (call.review as { amount_cents?: number } | null)?.amount_cents;
  if (!checks.approverActive) return "The approving reviewer no longer has access to this shop.";
  const limit = checks.approverLimitCents;
  if (amount !== undefined && amount !== null && limit !== null && amount > limit) {
    return `The approver's authority (${formatCents(limit)}) no longer covers ${formatCents(amount)}.`;
  }
  // Four eyes: an earlier approver too.
  const required = checks.requiredApprovals ?? null;
  if (required !== null && (checks.standingApprovals ?? 0) < required) {
    return `Of the ${required} approvals it needed, ${checks.standingApprovals ?? 0} still stand: an approver no longer has access to this shop or the authority for this amount.`;
  }
  return null;
}

export function failureOf(err: unknown, name: string): ToolErrorBody {
  if (err instanceof ToolError) return err.toBody();
  if (err instanceof ProviderTransientError) return { error_category: "transient", is_retryable: true, message: err.message };
  // The database was out of reach (down, or every connection busy for too long): the call's transaction never
  // committed, so it is retried later under the same idempotency key — never given up as if it had crashed.
  const unreachable = connectivityFailureKind(err);
  if (unreachable)
    return {
      error_category: "transient",
      is_retryable: true,
      message: `${name} could not reach the shop's database (${unreachable}); nothing was done yet`,
    };
  log.error({ err, tool: name }, "tool crashed");
  return {
    error_category: "system",
    is_retryable: false,
    message: `${name} failed unexpectedly; nothing is known to have happened. Do not claim success.`,
  };
}

/**
 * A failure as the call's outcome: a transient one waits for a retry (same key) until the attempts run out — unless
 * the provider `acted` (its answer was lost, its record committed with this outcome): that one always waits for its
 * retry, also past the last attempt, since the retry replays the provider's record under the key (it never asks the
 * provider again, so it cannot fail this way twice) — and "nothing was done" would deny money that moved.
 */
export function failedSettlement(
  state: RunState,
  call: RunnableCall,
  failure: ToolErrorBody,
  attempt: number,
  opts: { acted?: boolean } = {},
): Execution["settled"] {
  if (failure.is_retryable && failure.error_category === "transient") {
    if (opts.acted || attempt < state.policy.rules.budgets.maxToolAttempts) {
      return {
        status: "RETRY_WAIT",
        result: withReview(failure, call),
        isError: true,
        attempts: attempt,
        nextAttemptAt: new Date(Date.now() + backoffMs(attempt)),
      };
    }
    failure = {
      ...failure,
      is_retryable: false,
      message: `${failure.message}. Gave up after ${attempt} attempts; nothing was done. Escalate to a person.`,
      exhausted: true,
    };
  }
  return { status: "FAILED", result: withReview(failure, call), isError: true, attempts: attempt, nextAttemptAt: null };
}

const withReview = (body: Record<string, unknown>, call: RunnableCall) => (call.review ? { ...body, review: call.review } : body);

/**
 * Executes one approved call. Side effects commit with their outcome (`written`); for other calls the caller writes
 * the outcome with its next statement (the tool_result message), which is safe: running them again is harmless.
 */
export async function executeCall(
  deps: RuntimeDeps,
  state: RunState,
  call: RunnableCall,
  opts: { verification?: Verification; commitWith?: CommitWith } = {},
): Promise<Execution> {
  const db = storeOf(deps.db);
  const { ref } = state;
  const tool = getTool(call.name);
  // A call that writes may change who the visitor is (verify_customer): the gates read the verification afresh after it.
  if (!tool?.readOnly) state.verification = null;
  const started = performance.now();
  const attempt = call.attempts + 1;
  const elapsed = () => performance.now() - started;
  const input = (call.effectiveInput ?? call.input) as Record<string, unknown>;
  const timeoutMs = setting("SUPPORT_TOOL_TIMEOUT_MS");
  const none = { escalation: null } as const;

  // Verification was checked by the gate when the call was proposed; execution binds the conversation's state now.
  // A side effect reads it (and whether its approver's authority still holds) in its own transaction, below.
  const effect = !!tool && (tool.sideEffect || tool.transactional);
  const context = (verification: Verification) => ({
    tenantId: ref.tenantId,
    conversationId: ref.conversationId,
    runId: ref.id,
    toolCallId: call.id,
    idempotencyKey: call.idempotencyKey ?? call.id,
    verifiedCustomerId: verification.verifiedCustomerId,
  });

  if (!tool || !effect) {
    const ctx = context(opts.verification ?? (await readVerification(db, ref.conversationId)));
    try {
      if (!tool) throw new ToolError("permission", `Unknown tool ${call.name}.`, false);
      failpoint("before-effect", call.name);
      const toolStarted = performance.now();
      const body = await withTimeout(tool.execute(input, { ...ctx, db, gatesRead: call.gatesRead }), timeoutMs, call.name);
      noteToolTime(deps, toolStarted);
      failpoint("after-effect", call.name);
      return {
        settled: {
          status: "SUCCEEDED",
          result: withReview(redact(body) as Record<string, unknown>, call),
          isError: false,
          attempts: attempt,
          nextAttemptAt: null,
        },
        written: false,
        activeMs: elapsed(),
        escalation: tool.escalation ? tool.escalation(input) : null,
      };
    } catch (err) {
      return { settled: failedSettlement(state, call, failureOf(err, call.name), attempt), written: false, activeMs: elapsed(), ...none };
    }
  }

  const afterCommit: Array<() => Promise<void>> = [];
  let finished: StepOutcome | undefined;
  let stepError: { err: unknown } | undefined;
  try {
    const settled = await withLease<Execution["settled"], EffectChecks>(
      db,
      state.lease,
      {},
      async (tx, checks) => {
        // An approver who lost access or authority meanwhile: the transaction rolls back (it wrote nothing but the
        // renewal) and the call fails with a permission error, below — unless the effect already happened under this
        // key (a retry after its answer was lost): then the tool replays what was done, which stands.
        const done = tool.sideEffect && !!checks.recordedOutcome;
        const revoked = done ? null : approverRevoked(checks, call);
        if (revoked) throw new ToolError("permission", `${revoked} Nothing was done; tell the customer a person will follow up.`, false);
        const verification = opts.verification ?? checks;
        // Judged on totals read before it was saved: judged again on what is done now (./judged-again).
        if (!done) await judgeAgainWhereItActs(tx, { state, call, tool, input, verification, reads: checks });
        const ctx = context(verification);
        failpoint("before-effect", call.name);
        const toolStarted = performance.now();
        let outcome: Execution["settled"];
        let body: Record<string, unknown> | null = null;
        try {
          body = await withTimeout(
            tool.execute(input, {
              ...ctx,
              db: tx,
              store: db,
              afterCommit: (w) => afterCommit.push(w),
              ...(tool.sideEffect ? { recordedOutcome: checks.recordedOutcome ?? null } : {}),
              ...(tool.effectRead ? { effectRead: checks.effectRead ?? null } : {}),
            }),
            timeoutMs,
            call.name,
          );
          outcome = {
            status: "SUCCEEDED",
            result: withReview(redact(body) as Record<string, unknown>, call),
            isError: false,
            attempts: attempt,
            nextAttemptAt: null,
          };
        } catch (err) {
          // The provider acted but its answer was lost: keep the effect, retry later under the same key.
          if (!(err instanceof ProviderAnswerLostError)) throw err;
          outcome = failedSettlement(state, call, failureOf(err, call.name), attempt, { acted: true });
        }
        noteToolTime(deps, toolStarted);
        failpoint("after-effect", call.name);
        if (opts.commitWith && outcome.status === "SUCCEEDED") {
          try {
            finished = await opts.commitWith(tx, outcome, Math.round(elapsed()));
          } catch (err) {
            // The step's own failure (a lost lease, the database): not the tool's — unless it is a write the tool
            // left to go with the step (its effect's records, lib/store/effects): then the tool failed.
            if ((err as Error)?.name !== "DeferredWriteError") stepError = { err };
            throw err;
          }
          return outcome;
        }
        const s = Statement.plain();
        settleCall(s, "settled", call.id, outcome);
        s.update("run_ms", "Run", { activeMs: sql`"activeMs" + ${Math.round(elapsed())}::int` }, sql<boolean>`"Run".id = ${ref.id}`);
        if (body && outcome.status === "SUCCEEDED") keepWhatWasLearned(s, state, call.name, body);
        await s.runThenCommit(tx); // the transaction's last statement: its COMMIT goes with it
        return outcome;
      },
      effectChecksSql(
        state,
        call,
        !!tool.sideEffect,
        tool.sideEffect && tool.effectRead ? tool.effectRead(input, { tenantId: ref.tenantId }) : null,
      ),
    );
    // What the tool queued for after its commit (a mail) goes on without the run: a failure there never undoes the
    // call, and the customer's reply never waits for a mail server — its delay, only for an email with an account,
    // would tell anyone timing the chat which emails are the shop's customers.
    for (const work of afterCommit) void work().catch((err) => log.error({ err, tool: call.name }, "work after a tool's commit failed"));
    return { settled, written: true, activeMs: 0, ...none, ...(finished ? { finished } : {}) };
  } catch (err) {
    if ((err as Error)?.name === "LeaseLostError") throw err;
    if (stepError) throw stepError.err;
    if (err instanceof JudgedAgain) {
      // Nothing was done (the transaction rolled back): the call goes back to the gates, due now.
      const judgedAgain = { gate: err.gate, reason: err.reason, policyVersion: state.policy.version };
      const settled = {
        status: "DEFERRED",
        result: null,
        isError: false,
        attempts: call.attempts,
        nextAttemptAt: new Date(),
        judgedAgain,
      } as const;
      return { settled, written: false, activeMs: elapsed(), ...none };
    }
    // The effect's transaction rolled back whole: nothing happened. The outcome is written by the caller.
    return { settled: failedSettlement(state, call, failureOf(err, call.name), attempt), written: false, activeMs: elapsed(), ...none };
  }
}

/** Benchmarks' accounting (RuntimeDeps.metrics): a tool body's time, and its span when asked for. */
function noteToolTime(deps: RuntimeDeps, started: number): void {
  if (!deps.metrics) return;
  const ended = performance.now();
  deps.metrics.toolMs += ended - started;
  deps.metrics.toolSpans?.push([started, ended]);
}

/** Every tool has a time limit: a call that overruns fails (transiently), and its transaction rolls back. */
function withTimeout<T>(work: Promise<T>, ms: number, name: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ProviderTransientError(`${name} did not answer within ${Math.round(ms / 1000)} s`)), ms);
  });
  return Promise.race([work, limit]).finally(() => clearTimeout(timer));
}

/**
 * What a successful call taught the run, kept with its outcome (same statement): a verified identity — scoped to that
 * customer, with its level and an expiry — so every later gate sees it.
 */
function keepWhatWasLearned(s: Statement, state: RunState, toolName: string, body: Record<string, unknown>): void {
  if (toolName !== "verify_customer" || body.status !== "verified" || typeof body.customer_id !== "string") return;
  const now = new Date();
  const { ref, policy } = state;
  s.update(
    "verified",
    "Conversation",
    {
      verifiedCustomerId: body.customer_id,
      verificationLevel: typeof body.level === "string" ? sql`${body.level}::"VerificationLevel"` : null,
      verifiedAt: now,
      verificationExpiresAt: new Date(now.getTime() + policy.rules.verificationTtlMinutes * 60_000),
      updatedAt: sql`now()`,
    },
    sql<boolean>`"Conversation".id = ${ref.conversationId}`,
  );
  addAudit(s, "verified_audit", {
    tenantId: ref.tenantId,
    runId: ref.id,
    actor: "harness",
    action: "customer.verified",
    subject: body.customer_id,
  });
}
