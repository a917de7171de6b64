import type { RuntimeDeps } from "./deps";
import { claimRun, LeaseLostError, releaseRun } from "./lease";
import { failpoint } from "./failpoints";
import { loadPolicy } from "./policy";
import { advanceToolPhase } from "./tool-phase";
import { runModelTurn } from "./model-turn";
import { escalateRun } from "./run-end";
import { assertLease } from "./lease";
import type { ContentBlock } from "./transcript";
import type { RunRef } from "./tool-gating";

/** The next thing a run needs, read from the database alone. */
type NextStep =
  | { kind: "tool_phase"; assistant: { seq: number; content: ContentBlock[] } }
  | { kind: "model_turn" }
  | { kind: "not_running" };

async function nextStep(deps: RuntimeDeps, runId: string): Promise<NextStep> {
  const run = await deps.db.run.findUniqueOrThrow({ where: { id: runId } });
  if (run.phase !== "RUNNING") return { kind: "not_running" };
  const last = await deps.db.message.findFirst({ where: { conversationId: run.conversationId, inTranscript: true }, orderBy: { seq: "desc" } });
  if (last?.role === "assistant") {
    const content = last.content as unknown as ContentBlock[];
    if (content.some((b) => b.type === "tool_use")) return { kind: "tool_phase", assistant: { seq: last.seq, content } };
    // An assistant message without tool_use is only ever left last by pause_turn: send it back as it is.
  }
  return { kind: "model_turn" };
}

export interface AdvanceResult {
  claimed: boolean;
  phase?: string;
  followUpRunId?: string | null;
}

const MAX_STEPS = 64;

/**
 * Advances one run as far as it can go without a person: claim it, then loop — tool phase or model turn,
 * decided from durable state — until it completes, parks, waits for a retry or ends. Safe to call from any
 * process at any time: without the lease it does nothing; after a crash the next call picks up where the
 * database says the run is.
 */
export async function advanceRun(deps: RuntimeDeps, runId: string): Promise<AdvanceResult> {
  if (!(await claimRun(deps.db, runId, deps.workerId, deps.leaseMs))) return { claimed: false };
  failpoint("after-claim");
  const runRow = await deps.db.run.findUniqueOrThrow({ where: { id: runId } });
  const ref: RunRef = { id: runRow.id, tenantId: runRow.tenantId, conversationId: runRow.conversationId };
  const policy = await loadPolicy(deps.db, ref.tenantId, runRow.policyVersion);
  let followUpRunId: string | null = null;
  try {
    for (let step = 0; step < MAX_STEPS; step++) {
      const next = await nextStep(deps, runId);
      if (next.kind === "not_running") break;
      if (next.kind === "tool_phase") {
        const outcome = await advanceToolPhase(deps, ref, policy, next.assistant);
        if (outcome.kind === "parked") {
          await deps.db.$transaction(async (tx) => {
            await assertLease(tx, runId, deps.workerId, deps.leaseMs);
            await tx.run.update({ where: { id: runId }, data: { phase: "WAITING_FOR_APPROVAL", leaseOwner: null, leaseExpiresAt: null } });
          });
          break;
        }
        if (outcome.kind === "waiting_for_retry") {
          await deps.db.$transaction(async (tx) => {
            await assertLease(tx, runId, deps.workerId, deps.leaseMs);
            await tx.run.update({ where: { id: runId }, data: { phase: "WAITING_FOR_RETRY", nextAttemptAt: outcome.at, leaseOwner: null, leaseExpiresAt: null } });
          });
          break;
        }
        if (outcome.kind === "dead_letter") {
          followUpRunId = await deps.db.$transaction(async (tx) => {
            await assertLease(tx, runId, deps.workerId, deps.leaseMs);
            return escalateRun(tx, ref, { trigger: "no_progress", reason: outcome.reason, rootCause: "A tool kept failing after every retry.", phase: "DEAD_LETTER", model: runRow.model, policy, notice: "I'm sorry — our system couldn't complete that just now, and nothing was changed. I've passed it to our team, and a person will follow up here." });
          });
          break;
        }
        continue;
      }
      const turn = await runModelTurn(deps, ref, policy);
      if (turn.kind === "ended") {
        followUpRunId = turn.followUpRunId;
        break;
      }
      if (turn.kind === "waiting_for_retry") break;
    }
  } catch (err) {
    if (err instanceof LeaseLostError) return { claimed: true, phase: "LEASE_LOST" };
    throw err;
  } finally {
    await releaseRun(deps.db, runId, deps.workerId).catch(() => undefined);
  }
  const final = await deps.db.run.findUniqueOrThrow({ where: { id: runId }, select: { phase: true } });
  if (final.phase === "RUNNING") {
    // The step cap is a guard: a run that loops without ending is handed to a person.
    await deps.db.$transaction(async (tx) => {
      if (!(await claimRun(deps.db, runId, deps.workerId, deps.leaseMs))) return;
      followUpRunId = await escalateRun(tx, ref, { trigger: "no_progress", reason: "The run made too many steps without finishing.", rootCause: "Step cap reached.", model: runRow.model, policy });
    });
  }
  return { claimed: true, phase: (await deps.db.run.findUniqueOrThrow({ where: { id: runId }, select: { phase: true } })).phase, followUpRunId };
}

/** Advances a run and then any follow-up runs started by customer text queued while it was busy. */
export async function advanceConversationFrom(deps: RuntimeDeps, runId: string): Promise<void> {
  let next: string | null | undefined = runId;
  for (let i = 0; next && i < 10; i++) {
    const result: AdvanceResult = await advanceRun(deps, next);
    next = result.followUpRunId;
  }
}

