import { randomUUID } from "node:crypto";
import type { RuntimeDeps } from "./deps";
import type { LeaseClaim } from "./run-end";
import { publishEvent } from "@/lib/events";
import { Prisma } from "@/lib/db/prisma-types";
import { fastSql, sqlTransaction } from "@/lib/db/sql";
import { assertLease, claimRun, LeaseLostError, releaseRun } from "./lease";
import { failpoint } from "./failpoints";
import { advanceToolPhase } from "./tool-phase";
import { runModelTurn } from "./model-turn";
import { escalateRun } from "./run-end";
import { loadRunState, type CreatedRun, type RunState } from "./run-state";
import { loadTranscriptRows, transcriptKnownThrough, type ContentBlock, type TranscriptRow } from "./transcript";

/** The next thing a run needs, read from its transcript: answer an assistant message's tool calls, or call the model. */
type NextStep =
  | { kind: "tool_phase"; assistant: { seq: number; content: ContentBlock[] }; rows: TranscriptRow[] }
  | { kind: "model_turn"; rows: TranscriptRow[] };

async function nextStep(deps: RuntimeDeps, state: RunState): Promise<NextStep> {
  const rows = (state.transcript ??= await loadTranscriptRows(deps.db, state.ref.conversationId));
  const last = rows[rows.length - 1];
  if (last?.role === "assistant") {
    const content = last.content as ContentBlock[];
    if (content.some((b) => b.type === "tool_use")) return { kind: "tool_phase", assistant: { seq: last.seq, content }, rows };
    // An assistant message without tool_use is only ever left last by pause_turn: send it back as it is.
  }
  return { kind: "model_turn", rows };
}

export interface AdvanceOptions {
  /** The caller created or resumed the run with this lease already taken (see `claimFor`). */
  claimedAs?: LeaseClaim;
  /** With `claimedAs`: the run as the caller just created it (intake's `run`), saving reads. */
  run?: CreatedRun | null;
}

export interface AdvanceResult {
  claimed: boolean;
  phase?: string;
  followUpRunId?: string | null;
}

const MAX_STEPS = 64;

async function setPhase(deps: RuntimeDeps, runId: string, phase: "WAITING_FOR_APPROVAL" | "WAITING_FOR_RETRY", nextAttemptAt: Date | null) {
  await sqlTransaction(deps.db, async (tx) => {
    await assertLease(tx, runId, deps.workerId, deps.leaseMs);
    const [run] = await tx.query<{ tenantId: string; conversationId: string }>(Prisma.sql`
      UPDATE "Run" SET phase = ${phase}::"RunPhase", "nextAttemptAt" = ${nextAttemptAt}, "leaseOwner" = NULL, "leaseExpiresAt" = NULL
      WHERE id = ${runId} RETURNING "tenantId", "conversationId"`);
    // Live views learn that the run now waits (for a person, or a retry) in the same commit.
    await publishEvent(tx, { tenantId: run!.tenantId, conversationId: run!.conversationId, type: "run.phase", data: { runId, phase } });
  });
}

/**
 * Advances one run as far as it can go without a person: claim it, then loop — tool phase or model turn,
 * decided from the transcript — until it completes, parks, waits for a retry or ends. Safe to call from any
 * process at any time: without the lease it does nothing; after a crash the next call picks up where the
 * database says the run is.
 */
export async function advanceRun(runtime: RuntimeDeps, runId: string, opts: AdvanceOptions = {}): Promise<AdvanceResult> {
  // Every advance holds the lease under its own identity, so two advances in one process (a request and the
  // in-process worker share a runtime) can never both pass the fence. `claimedAs`: the caller created or resumed
  // the run with this lease already taken (see `claimFor`), so no background worker could take it in between.
  const lease = opts.claimedAs ?? claimFor(runtime);
  const deps: RuntimeDeps = { ...runtime, workerId: lease.workerId, leaseMs: lease.leaseMs };
  const sql = fastSql(deps.db); // the hot path's statements go to the pg pool directly (lib/db/sql)
  const claimedRow = opts.claimedAs ? null : await claimRun(sql, runId, deps.workerId, deps.leaseMs);
  if (!opts.claimedAs && !claimedRow) return { claimed: false };
  failpoint("after-claim");
  const created = opts.claimedAs ? opts.run : null;
  const state = await loadRunState(sql, runId, claimedRow ?? created?.state);
  // The message that started the run is its transcript's last row (while the run is active only its lease holder
  // adds one), so if this process knows everything up to it, that is the transcript.
  if (created) state.transcript = transcriptKnownThrough(state.ref.conversationId, created.messageSeq);
  let followUpRunId: string | null = null;
  let phase = "RUNNING";
  try {
    for (let step = 0; step < MAX_STEPS && phase === "RUNNING"; step++) {
      const next = await nextStep(deps, state);
      if (next.kind === "tool_phase") {
        const outcome = await advanceToolPhase(deps, state, next.assistant, next.rows);
        if (outcome.kind === "parked") {
          await setPhase(deps, runId, "WAITING_FOR_APPROVAL", null);
          phase = "WAITING_FOR_APPROVAL";
        } else if (outcome.kind === "waiting_for_retry") {
          await setPhase(deps, runId, "WAITING_FOR_RETRY", outcome.at);
          phase = "WAITING_FOR_RETRY";
        } else if (outcome.kind === "dead_letter") {
          followUpRunId = await deps.db.$transaction(async (tx) => {
            await assertLease(tx, runId, deps.workerId, deps.leaseMs);
            return escalateRun(tx, state.ref, { trigger: "no_progress", reason: outcome.reason, rootCause: "A tool kept failing after every retry.", phase: "DEAD_LETTER", model: state.model, policy: state.policy, notice: "I'm sorry — our system couldn't complete that just now, and nothing was changed. I've passed it to our team, and a person will follow up here." });
          });
          phase = "DEAD_LETTER";
        }
        continue;
      }
      const turn = await runModelTurn(deps, state, next.rows);
      if (turn.kind === "ended") {
        followUpRunId = turn.followUpRunId;
        phase = turn.phase;
      } else if (turn.kind === "waiting_for_retry") {
        phase = "WAITING_FOR_RETRY";
      }
    }
    if (phase === "RUNNING") {
      // The step cap is a guard: a run that loops without ending is handed to a person.
      followUpRunId = await deps.db.$transaction(async (tx) => {
        await assertLease(tx, runId, deps.workerId, deps.leaseMs);
        return escalateRun(tx, state.ref, { trigger: "no_progress", reason: "The run made too many steps without finishing.", rootCause: "Step cap reached.", model: state.model, policy: state.policy });
      });
      phase = "ESCALATED";
    }
  } catch (err) {
    if (err instanceof LeaseLostError) return { claimed: true, phase: "LEASE_LOST" };
    throw err;
  } finally {
    // Parking and ending already let go of the lease in their own statement; otherwise let go now.
    if (phase === "RUNNING") await releaseRun(sql, runId, deps.workerId).catch(() => undefined);
  }
  if (phase === "RUNNING") {
    const [final] = await sql.query<{ phase: string }>(Prisma.sql`SELECT phase::text AS phase FROM "Run" WHERE id = ${runId}`);
    phase = final?.phase ?? phase;
  }
  return { claimed: true, phase, followUpRunId };
}

/** Advances a run and then any follow-up runs started by customer text queued while it was busy. */
export async function advanceConversationFrom(deps: RuntimeDeps, runId: string, opts: AdvanceOptions = {}): Promise<AdvanceResult> {
  let result: AdvanceResult = await advanceRun(deps, runId, opts);
  for (let i = 0; result.followUpRunId && i < 10; i++) result = await advanceRun(deps, result.followUpRunId);
  return result;
}

/**
 * A fresh lease identity of this runtime: what a caller takes at the moment it creates or resumes a run (so it
 * advances the run itself), and what every advance holds.
 */
export function claimFor(deps: RuntimeDeps): LeaseClaim {
  return { workerId: `${deps.workerId}:${randomUUID().slice(0, 8)}`, leaseMs: deps.leaseMs };
}
