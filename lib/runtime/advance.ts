// The loop (DESIGN §2.1): claim the run, then step by step — deliver queued customer text, answer an assistant
// message's tool calls, or call the model — until the run completes, parks, waits for a retry or ends. Each step is
// decided from the transcript alone and written as one statement fenced by the lease; this file only orchestrates.
import { randomUUID } from "node:crypto";
import type Anthropic from "@anthropic-ai/sdk";
import { sql } from "kysely";
import { type Store, storeOf } from "@/lib/db/kysely";
import { type Lease, LeaseLostError } from "@/lib/store/lease";
import { claimRun, type RunStateRow, readRunState, releaseRun, runPhase } from "@/lib/store/runs";
import { callsOfLatestMessage, type ToolCallRow } from "@/lib/store/tool-calls";
import {
  type ContentBlock,
  loadTranscript,
  queuedIsStaffOnly,
  toolUseIdsIn,
  type TranscriptRow,
  transcriptKnownThrough,
  withQueuedText,
} from "@/lib/store/transcript";
import type { RuntimeDeps } from "./deps";
import { endRun, escalateRun } from "./end";
import { failpoint } from "./failpoints";
import { runModelTurn } from "./model-turn";
import { type CreatedRun, extendTranscript, landInFlight, type RunState, runStateFrom } from "./run-state";
import type { StepOutcome } from "./step";
import { StepWrite } from "./step-write";
import { advanceToolPhase } from "./tool-phase";
import { annotateSpan, withSpan } from "@/lib/telemetry/tracing";
import { connectivityFailureKind } from "@/lib/db/outage";
import { backoffMs } from "./retry";

/** A lease identity minted by a caller before it creates or resumes a run (so it advances the run itself). */
export interface LeaseClaim {
  workerId: string;
  leaseMs: number;
}

/** The next thing a run needs, read from its transcript. */
type NextStep =
  | { kind: "deliver_queued" }
  | { kind: "tool_phase"; assistant: { seq: number; content: ContentBlock[] } }
  | { kind: "model_turn" };

function nextStep(state: RunState, rows: TranscriptRow[]): NextStep {
  // A follow-up run (started because the customer wrote while the previous one was busy) has nothing of its own in
  // the transcript yet: it first delivers the text that waited.
  if (!rows.some((r) => r.runId === state.ref.id)) return { kind: "deliver_queued" };
  const last = rows[rows.length - 1];
  if (last?.role === "assistant") {
    const content = last.content as ContentBlock[];
    if (content.some((b) => b.type === "tool_use")) return { kind: "tool_phase", assistant: { seq: last.seq, content } };
    // An assistant message without tool_use is only ever left last by pause_turn: send it back as it is.
  }
  return { kind: "model_turn" };
}

/**
 * A run a decision resumed for the decider (./resume): its state, and what it goes on from — its transcript and the
 * calls of its last tool_use message — read right behind the decision's COMMIT, in the same round trip. A read that
 * failed is left for the advance to do itself.
 */
export interface ResumedWith {
  run: RunStateRow;
  /** null: the read failed */
  transcript: TranscriptRow[] | null;
  /** undefined: the read failed (null: the run has no calls) */
  recordedCalls: { seq: number; calls: ToolCallRow[] } | null | undefined;
}

export interface AdvanceOptions {
  /** The caller created or resumed the run with this lease already taken (see `claimFor`). */
  claimedAs?: LeaseClaim;
  /** With `claimedAs`: the run as the caller just created it (intake), saving reads. */
  run?: CreatedRun | null;
  /** With `claimedAs`: the run's state as the caller knows it (a worker that claimed it). */
  runRow?: RunStateRow;
  /** With `claimedAs`: the run as the decision that resumed it read it, with its transcript and last calls. */
  resumedWith?: ResumedWith | null;
}

export interface AdvanceResult {
  claimed: boolean;
  phase?: string;
  followUpRunId?: string | null;
}

const MAX_STEPS = 64;

/**
 * Advances one run as far as it can go without a person. Safe to call from any process at any time: without the
 * lease it does nothing; after a crash the next call picks up where the database says the run is.
 */
export function advanceRun(runtime: RuntimeDeps, runId: string, opts: AdvanceOptions = {}): Promise<AdvanceResult> {
  return withSpan("run.advance", { "run.id": runId }, () => advanceRunInSpan(runtime, runId, opts));
}

async function advanceRunInSpan(runtime: RuntimeDeps, runId: string, opts: AdvanceOptions): Promise<AdvanceResult> {
  const db = storeOf(runtime.db);
  // Every advance holds the lease under its own identity, so two advances in one process (a request and the
  // in-process worker share a runtime) can never both pass the fence.
  const claim = opts.claimedAs ?? claimFor(runtime);
  const lease: Lease = { runId, owner: claim.workerId, ms: claim.leaseMs };
  const resumedWith = opts.claimedAs ? opts.resumedWith : null;
  const row = opts.claimedAs
    ? (opts.run?.state ?? resumedWith?.run ?? opts.runRow ?? (await readRunState(db, runId)))
    : await claimRun(db, lease);
  if (!row) return { claimed: false };
  failpoint("after-claim");
  let state: RunState;
  try {
    state = await stateToAdvance(db, row, lease, opts);
  } catch (err) {
    // The run is ours: a read that failed lets it wait for a retry (or go at once, in an outage) — never held until
    // its lease runs out.
    await stepFailed(runtime, runId, lease, err).catch(() => releaseRun(db, lease).catch(() => undefined));
    throw err;
  }
  annotateSpan({ "tenant.id": state.ref.tenantId, "conversation.id": state.ref.conversationId });

  // While the advance works (a model call can take a while), its lease is kept alive; if this process dies, the
  // lease runs out within `leaseMs` and another worker takes over.
  const heartbeat = setInterval(
    () => {
      sql`UPDATE "Run" SET "leaseExpiresAt" = now() + make_interval(secs => ${lease.ms / 1000}::float8)
        WHERE id = ${runId} AND "leaseOwner" = ${lease.owner} AND phase = 'RUNNING'`
        .execute(db)
        .catch(() => undefined);
    },
    Math.max(500, lease.ms / 3),
  );
  heartbeat.unref();
  let outcome: StepOutcome = { kind: "next" };
  try {
    for (let step = 0; step < MAX_STEPS && outcome.kind === "next"; step++) {
      // A step still committing (see InFlightStep) is only ever followed by a model turn, which waits for it.
      const inFlight = state.inFlight;
      const rows = inFlight
        ? [...(state.transcript ?? []), ...inFlight.rows]
        : (state.transcript ??= await loadTranscript(db, state.ref.conversationId));
      const next = nextStep(state, rows);
      if (inFlight && next.kind !== "model_turn") throw new Error(`run ${runId}: a step in flight must be followed by a model turn`);
      if (next.kind === "deliver_queued") outcome = await deliverQueued(runtime, state);
      else if (next.kind === "tool_phase") outcome = await advanceToolPhase(runtime, state, next.assistant, rows);
      else outcome = await runModelTurn(runtime, state, rows);
    }
    if (outcome.kind === "next") {
      // The step cap is a guard: a run that loops without ending is handed to a person.
      if (state.inFlight) await landInFlight(db, state, state.inFlight);
      state.inFlight = null;
      const ended = await escalateRun(db, new StepWrite(state), {
        trigger: "no_progress",
        reason: "The run made too many steps without finishing.",
        rootCause: "Step cap reached.",
        recommendedAction: "",
      });
      outcome = { kind: "ended", ...ended };
    }
  } catch (err) {
    await state.inFlight?.committed.catch(() => undefined); // never let go while a write of ours may still land
    if (err instanceof LeaseLostError) return { claimed: true, phase: "LEASE_LOST" };
    await stepFailed(runtime, runId, lease, err).catch(() => releaseRun(db, lease).catch(() => undefined));
    throw err;
  } finally {
    clearInterval(heartbeat);
  }
  const phase =
    outcome.kind === "ended"
      ? outcome.phase
      : outcome.kind === "parked"
        ? "WAITING_FOR_APPROVAL"
        : outcome.kind === "waiting_for_retry"
          ? "WAITING_FOR_RETRY"
          : ((await runPhase(db, runId)) ?? "RUNNING");
  return { claimed: true, phase, followUpRunId: outcome.kind === "ended" ? outcome.followUpRunId : null };
}

/** The state an advance starts from: the run's row, its policy, its transcript and (a waiting run) its last calls. */
async function stateToAdvance(db: Store, row: RunStateRow, lease: Lease, opts: AdvanceOptions): Promise<RunState> {
  const state = await runStateFrom(db, row, lease);
  const resumedWith = opts.claimedAs ? opts.resumedWith : null;
  // The message that started the run is its transcript's last row (while the run is active only its lease holder
  // adds one), so if this process knows everything up to it, that is the transcript.
  if (opts.run) {
    state.transcript = transcriptKnownThrough(state.ref.conversationId, opts.run.messageSeq);
    state.verification = opts.run.verification ?? null;
    return state;
  }
  // A run that was waiting (a decision, a retry) goes on with its last tool_use message's calls: read them while the
  // transcript is read — or take both from the decision that resumed it (it read them behind its COMMIT).
  const [rows, calls] = await Promise.all([
    resumedWith?.transcript ?? loadTranscript(db, state.ref.conversationId),
    resumedWith && resumedWith.recordedCalls !== undefined ? resumedWith.recordedCalls : callsOfLatestMessage(db, row.id),
  ]);
  state.transcript = rows;
  state.recordedCalls = calls;
  return state;
}

/**
 * A step failed in a way no step handles (a bug, a value the database refuses). The database unreachable: let go at
 * once, so whoever reaches it first goes on (an outage is not the run's fault, and is not counted). Otherwise the run
 * waits and is tried again with backoff — never claimed straight back, which would ask the model again in a tight
 * loop — counted with the model's request attempts; past the policy's budget it ends as a dead letter a person sees.
 * Written from the run's state as committed: nothing of the failed step landed.
 */
async function stepFailed(runtime: RuntimeDeps, runId: string, lease: Lease, err: unknown): Promise<void> {
  const db = storeOf(runtime.db);
  if (connectivityFailureKind(err)) return releaseRun(db, lease);
  const row = await readRunState(db, runId);
  if (!row) return;
  const state = await runStateFrom(db, row, lease);
  const attempts = state.counters.requestAttempts + 1;
  const w = new StepWrite(state, { counters: { requestAttempts: 1 } });
  if (attempts < state.policy.rules.budgets.maxRequestAttempts) {
    const nextAttemptAt = new Date(Date.now() + backoffMs(attempts));
    await w.transitionTo({ to: "WAITING_FOR_RETRY", release: true, nextAttemptAt }).run(db);
    return;
  }
  const errorText = err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 500) : String(err).slice(0, 500);
  await escalateRun(db, w, {
    trigger: "no_progress",
    reason: `A step of the run failed ${attempts} time(s) in a row.`,
    rootCause: errorText,
    recommendedAction: "",
    phase: "DEAD_LETTER",
    // The failing step may be the one that answers the run's tool calls: then the conversation waits for the retry.
    holdConversation: await endsWithToolUse(db, state.ref.conversationId),
  });
}

/** Whether the conversation's transcript ends with an assistant message asking for tools (their results not written). */
async function endsWithToolUse(db: Store, conversationId: string): Promise<boolean> {
  const last = await db
    .selectFrom("Message")
    .select(["role", "content"])
    .where("conversationId", "=", conversationId)
    .where("inTranscript", "=", true)
    .orderBy("seq", "desc")
    .limit(1)
    .executeTakeFirst();
  return last?.role === "assistant" && toolUseIdsIn([last]).size > 0;
}

/**
 * Delivers the text queued while the previous run was busy, as this run's first user message (taken under the
 * messages' row locks), for the model to answer. A person's words alone are delivered and the run ends
 * (`deliverStaffWords`). Nothing queued (it was delivered meanwhile): the run has nothing to answer.
 */
async function deliverQueued(runtime: RuntimeDeps, state: RunState): Promise<StepOutcome> {
  if (await queuedIsStaffOnly(storeOf(runtime.db), state.ref.conversationId)) return deliverStaffWords(runtime, state);
  const w = new StepWrite(state);
  const queued = w.takeQueued();
  const msg = w.message({ role: "user", author: "HARNESS", content: withQueuedText([], queued) });
  w.conversation({ where: sql<boolean>`EXISTS (SELECT 1 FROM queued)` });
  const row = await w.run<{ seq: number | null; content: Anthropic.ContentBlockParam[] | null }>(
    storeOf(runtime.db),
    sql`(SELECT seq FROM ${sql.raw(msg)}) AS seq, (SELECT content FROM ${sql.raw(msg)}) AS content`,
  );
  if (row?.seq == null) {
    // Nothing queued after all (delivered meanwhile): the run has nothing to answer.
    return completeWith(runtime, new StepWrite(state), "nothing to answer");
  }
  extendTranscript(state, { seq: row.seq, role: "user", content: row.content, author: "HARNESS", runId: state.ref.id });
  return { kind: "next" };
}

/**
 * A person's words that waited for a run which ended after they handed the conversation back: they go into the
 * transcript, for the agent to read with the customer's next message, and the run ends — unasked, the agent would
 * answer the person. One statement, which takes a person's words only: text the customer sends meanwhile stays
 * queued, and starts the next run as the conversation is let go (lib/store/transcript counts what is left).
 */
async function deliverStaffWords(runtime: RuntimeDeps, state: RunState): Promise<StepOutcome> {
  const w = new StepWrite(state);
  const queued = w.takeQueued(undefined, true, true);
  w.message({ role: "user", author: "HARNESS", content: withQueuedText([], queued) });
  return completeWith(runtime, w, "a person's words delivered; nothing from the customer to answer");
}

/** Ends the run COMPLETED with the step `w` (and nothing for the model to answer); a follow-up run may take over. */
async function completeWith(runtime: RuntimeDeps, w: StepWrite, outcome: string): Promise<StepOutcome> {
  const { followUpRunId } = endRun(w, "COMPLETED", outcome);
  const row = await w.run<{ followUp: boolean }>(storeOf(runtime.db), sql`conv."followUp" FROM conv`);
  return { kind: "ended", phase: "COMPLETED", followUpRunId: row?.followUp ? followUpRunId : null };
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
