import { getTool } from "@/lib/tools/registry";
import { ToolError, type ToolErrorBody } from "@/lib/tools/types";
import { ProviderTransientError } from "@/lib/commerce/provider";
import type { Policy } from "@/lib/policy/policy";
import { formatCents } from "@/lib/money";
import type { RuntimeDeps } from "./deps";
import { assertLease, fencedWrite } from "./lease";
import { failpoint } from "./failpoints";
import { backoffMs } from "./retry";
import { needsPersisting, persistLearned, redact } from "./tool-hooks";
import { readVerification } from "./tool-gating";
import { Prisma } from "@/lib/db/prisma-types";
import { fastSql, sqlTransaction } from "@/lib/db/sql";
import { settleCall, settleCallSql, type CallSettlement, type ToolCallRow } from "./tool-call-rows";

type CallRow = ToolCallRow;

export interface ExecutionRun {
  id: string;
  tenantId: string;
  conversationId: string;
}

/** Why an approved call may no longer run: the approver lost the authority between deciding and resuming. */
async function approverStillAuthorised(deps: RuntimeDeps, call: CallRow): Promise<string | null> {
  if (!call.decidedById) return null;
  const [staff] = await fastSql(deps.db).query<{ authorityLimitCents: number | null }>(Prisma.sql`
    SELECT "authorityLimitCents" FROM "StaffUser" WHERE id = ${call.decidedById} AND "tenantId" = ${call.tenantId}`);
  const review = call.review as { amount_cents?: number } | null;
  const amount = review?.amount_cents;
  if (!staff) return "The approving reviewer no longer has access to this shop.";
  if (amount !== undefined && staff.authorityLimitCents !== null && amount > staff.authorityLimitCents) {
    return `The approver's authority (${formatCents(staff.authorityLimitCents)}) no longer covers ${formatCents(amount)}.`;
  }
  return null;
}

export interface ExecuteOptions {
  /** The conversation's verified customer, when the caller has just read it (gating in the same step). */
  verifiedCustomerId?: string | null;
  /**
   * Leave the outcome for the caller to write with its next fenced statement (the tool_result message). Safe for
   * exactly-once: until it is written, a crash leaves the call APPROVED (read-only: harmless to run again) or
   * EXECUTING (a side effect: run again under its idempotency key, which returns the recorded outcome).
   */
  settleLater?: boolean;
}

export interface Execution {
  settled: CallSettlement & { nextAttemptAt: Date | null };
  /** With `settleLater`: the outcome still to be written, and the working time to count with it. */
  unwritten: { id: string; activeMs: number } | null;
}

/**
 * Executes one approved call exactly once. The call is marked EXECUTING (attempt counted) before the effect;
 * the side effect itself runs under the call's idempotency key, so if this worker dies after the effect and a
 * second worker runs the call again, the provider returns the recorded outcome instead of acting twice.
 * Transient failures wait for a retry with backoff and the same key; exhausted retries fail the call.
 */
export async function executeCall(deps: RuntimeDeps, run: ExecutionRun, call: CallRow, policy: Policy, opts: ExecuteOptions = {}): Promise<Execution> {
  const tool = getTool(call.name);
  const started = performance.now();
  // A side effect is marked EXECUTING (its attempt counted) before it starts, so a crash is visible and retried
  // under the same key. A read-only call needs no such record: running it again is harmless.
  if (tool?.sideEffect) {
    await fencedWrite(fastSql(deps.db), run.id, deps.workerId, deps.leaseMs, {}, Prisma.sql`
      UPDATE "ToolCall" SET status = 'EXECUTING', attempts = attempts + 1, "updatedAt" = now() FROM lease WHERE "ToolCall".id = ${call.id}`);
  }
  const attempt = call.attempts + 1;

  let body: Record<string, unknown>;
  let isError = false;
  let retryAt: Date | null = null;
  const verifiedCustomerId = opts.verifiedCustomerId !== undefined ? opts.verifiedCustomerId : (await readVerification(fastSql(deps.db), run.conversationId)).verifiedCustomerId;
  const revoked = await approverStillAuthorised(deps, call);
  try {
    if (!tool) throw new ToolError("permission", `Unknown tool ${call.name}.`, false);
    if (revoked) throw new ToolError("permission", `${revoked} Nothing was done; tell the customer a person will follow up.`, false);
    failpoint("before-effect", call.name);
    const ctx = {
      tenantId: run.tenantId,
      conversationId: run.conversationId,
      runId: run.id,
      toolCallId: call.id,
      idempotencyKey: call.idempotencyKey ?? call.id,
      // Verification was checked by the gate when the call was proposed; a person's approval binds that check.
      verifiedCustomerId,
    };
    const input = (call.effectiveInput ?? call.input) as Record<string, unknown>;
    const toolStarted = performance.now();
    body = tool.sideEffect
      ? await tool.execute(input, { ...ctx, db: deps.db })
      : tool.name === "escalate_to_human"
        ? await deps.db.$transaction((tx) => tool.execute(input, { ...ctx, db: tx }))
        : await tool.execute(input, { ...ctx, db: deps.db });
    if (deps.metrics) deps.metrics.toolMs += performance.now() - toolStarted;
    failpoint("after-effect", call.name);
  } catch (err) {
    isError = true;
    let failure: ToolErrorBody;
    if (err instanceof ToolError) failure = err.toBody();
    else if (err instanceof ProviderTransientError) failure = { error_category: "transient", is_retryable: true, message: err.message };
    else {
      console.error(`[tool] ${call.name} crashed`, err);
      failure = { error_category: "system", is_retryable: false, message: `${call.name} failed unexpectedly; nothing is known to have happened. Do not claim success.` };
    }
    if (failure.is_retryable && failure.error_category === "transient") {
      if (attempt < policy.rules.budgets.maxToolAttempts) {
        retryAt = new Date(Date.now() + backoffMs(attempt));
      } else {
        failure = { ...failure, is_retryable: false, message: `${failure.message}. Gave up after ${attempt} attempts; nothing was done. Escalate to a person.`, exhausted: true };
      }
    }
    body = failure;
  }

  if (call.review) body = { ...body, review: call.review };
  const counters = { activeMs: performance.now() - started };
  const settled = retryAt
    ? { status: "RETRY_WAIT", result: body, isError: true, nextAttemptAt: retryAt, attempts: attempt }
    : { status: isError ? "FAILED" : "SUCCEEDED", result: isError ? body : redact(body), isError, attempts: attempt, nextAttemptAt: null };
  const persist = !isError && needsPersisting(call.name, body);
  if (opts.settleLater && !persist) return { settled, unwritten: { id: call.id, activeMs: counters.activeMs } };
  if (persist) {
    // What the run learned (a verified identity) commits with the result.
    await sqlTransaction(deps.db, async (tx) => {
      await assertLease(tx, run.id, deps.workerId, deps.leaseMs, counters);
      await persistLearned(tx, { run, call, result: body, policy });
      await settleCall(tx, call.id, settled);
    });
  } else {
    await fencedWrite(fastSql(deps.db), run.id, deps.workerId, deps.leaseMs, counters, settleCallSql(call.id, settled, Prisma.sql`FROM lease`));
  }
  return { settled, unwritten: null };
}
