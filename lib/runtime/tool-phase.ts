// The tool phase of an assistant message: every tool_use gets exactly one tool_result, all in ONE user message, in
// the order of the tool_use blocks, before any text (customer text queued meanwhile follows them). Until every call
// has its result the run waits — for a person (parked) or for a retry — and nothing is half-appended.
import type Anthropic from "@anthropic-ai/sdk";
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { toolResultText } from "@/lib/agent/framing";
import { SETTLED_CALL_STATUSES } from "@/lib/store/phases";
import type { FencedTx } from "@/lib/store/lease";
import { runDoneColumns } from "@/lib/store/runs";
import { callsOfMessage } from "@/lib/store/tool-calls";
import { type ContentBlock, type TranscriptRow, withQueuedText } from "@/lib/store/transcript";
import { getTool } from "@/lib/tools/registry";
import type { RuntimeDeps } from "./deps";
import { escalateRun, openCeilingEscalation } from "./end";
import { failpoint } from "./failpoints";
import { runSpecialist } from "./agent-as-tool";
import { executeCall, type Execution } from "./execution";
import {
  approvalStands,
  foldExecutions,
  termsToRegate,
  gatedRow,
  type PhaseCall,
  regateCall,
  runCalls,
  runnableCalls,
  settlePhase,
} from "./phase-calls";
import { escalates, gateCalls, type Verification } from "./gating";
import { park } from "./park";
import { queuedBytesBudget } from "./context";
import { actedCall, extendTranscript, type RunState } from "./run-state";
import type { StepOutcome } from "./step";
import { StepWrite } from "./step-write";

const isSettled = (c: { status: string }) => (SETTLED_CALL_STATUSES as readonly string[]).includes(c.status);
const exhausted = (c: { isError: boolean; result: unknown }) =>
  c.isError && (c.result as { exhausted?: boolean } | null)?.exhausted === true;

/**
 * Finishes the tool phase with step `w` (which may also record the turn itself): writes the outcomes not yet
 * written, what calls learned (a verified identity) and the escalations they opened, then
 *  - a call waits for a person → PARK (./park),
 *  - a call waits for a retry → the run waits,
 *  - every call has its result → the results message (with any queued customer text), or a dead letter when a tool
 *    kept failing.
 * `assistantSeq`: the tool_use message's seq, or null when `w` appends it (as its first message).
 */
export async function finishToolPhase(
  deps: RuntimeDeps,
  state: RunState,
  w: StepWrite,
  f: {
    uses: Anthropic.ToolUseBlockParam[];
    calls: PhaseCall[];
    followUps: Array<{ call: PhaseCall; execution: Execution }>;
    /** `w` appends the tool_use message itself (as its first message): its content, for the transcript */
    assistantContent?: ContentBlock[];
    /** the step changed nothing in the world (its calls were read-only): the next request need not wait for it */
    overlapNextRequest?: boolean;
  },
  /** write in this transaction (an effect's); the tool_result step is its last statement and takes its COMMIT */
  inTx?: { tx: FencedTx },
): Promise<StepOutcome> {
  const db = inTx?.tx ?? storeOf(deps.db);
  const { ref } = state;
  const { calls, toPark, parked, retryAt, judgedAgain } = await settlePhase(db, w, f.calls, f.followUps);
  if (parked) {
    state.transcript = null;
    return park(deps, w, toPark);
  }
  if (judgedAgain && !inTx) {
    // Back to the gates now, in this advance (the next step is this tool phase again): no wait for a worker.
    await w.run(db);
    return { kind: "next" };
  }
  if (retryAt) {
    await w.transitionTo({ to: "WAITING_FOR_RETRY", release: true, nextAttemptAt: retryAt }).run(db);
    state.transcript = null;
    return { kind: "waiting_for_retry", at: retryAt };
  }
  if (!calls.every(isSettled)) throw new Error(`tool phase of run ${ref.id} left calls unsettled`);

  // The ONE user message answering the assistant message, with the customer text that waited for it.
  const blocks: ContentBlock[] = f.uses.map((use) => {
    const call = calls.find((c) => c.toolUseId === use.id)!;
    // Keys in jsonb's own order (by length): the block the request sends is byte for byte the one read back later,
    // so a provider's prompt cache still matches the next request's prefix.
    return {
      type: "tool_result",
      content: toolResultText(call.result),
      ...(call.isError ? { is_error: true } : {}),
      tool_use_id: use.id,
    } as ContentBlock;
  });
  // Customer text that waited goes with the results while the run's own messages leave room under the context budget
  // (they are never summarised); past that it waits for the run's end and starts the next run.
  const room = queuedBytesBudget() - runBytes(state);
  const content = room > 0 ? withQueuedText(blocks, w.takeQueued(room, false)) : blocks;
  const results = w.message({ role: "user", author: "HARNESS", content });
  const settlingNow = calls.filter((c) => c.unwritten || c.recordedNow).map((c) => c.id);
  const failed = calls.find(exhausted);
  if (failed) {
    // A tool kept failing after every retry: a person must look (the results are recorded first).
    const ended = await escalateRun(db, w, {
      trigger: "no_progress",
      reason: `${failed.name} kept failing: ${(failed.result as { message?: string }).message ?? ""}`,
      rootCause: "A tool kept failing after every retry.",
      recommendedAction: "",
      phase: "DEAD_LETTER",
      notice:
        "I'm sorry — our system couldn't complete that just now, and nothing was changed. I've passed it to our team, and a person will follow up here.",
    });
    state.transcript = null;
    return { kind: "ended", ...ended };
  }
  type Written = { seq: number; content: ContentBlock[]; effects: string[]; acted: number; assistantSeq: number | null };
  const select = sql`${sql.raw(results)}.seq, ${sql.raw(results)}.content, ${runDoneColumns(ref.id, settlingNow)},
        ${f.assistantContent ? sql`(SELECT seq FROM conv_m0)` : sql`NULL::int`} AS "assistantSeq" FROM ${sql.raw(results)}`;
  // In an effect's transaction this is its last statement: its COMMIT goes with it (one round trip for both).
  const write = () => (inTx ? w.runThenCommit<Written>(inTx.tx, select) : w.run<Written>(db, select));
  // What the run has done, and the transcript, as this step left them (once it is committed).
  const committed = (row: Written) => {
    state.done = { effects: row.effects, acted: row.acted + calls.filter((c) => settlingNow.includes(c.id) && actedCall(c)).length };
    const written: TranscriptRow[] = [];
    if (f.assistantContent)
      written.push({ seq: row.assistantSeq!, role: "assistant", content: f.assistantContent, author: "AGENT", runId: ref.id });
    written.push({ seq: row.seq, role: "user", content: row.content, author: "HARNESS", runId: ref.id });
    extendTranscript(state, ...written);
    return written;
  };

  const known = state.transcript;
  if (f.overlapNextRequest && !inTx && known?.length) {
    // In flight while the next request goes out (see InFlightStep): the rows as the request will show them.
    const last = known[known.length - 1]!.seq;
    const rows: TranscriptRow[] = [];
    if (f.assistantContent) rows.push({ seq: last + 1, role: "assistant", content: f.assistantContent, author: "AGENT", runId: ref.id });
    rows.push({ seq: last + rows.length + 1, role: "user", content: blocks, author: "HARNESS", runId: ref.id });
    const done = write().then((row) => {
      const written = committed(row!);
      failpoint("after-results-appended");
      return written;
    });
    done.catch(() => undefined); // the next step awaits it; until then a failure is not "unhandled"
    state.inFlight = { rows, committed: done };
    return { kind: "next" };
  }
  const row = await write();
  committed(row!); // committed now, in an effect's transaction too (its COMMIT went with the write)
  failpoint("after-results-appended");
  return { kind: "next" };
}

/**
 * The tool phase of a recorded assistant message (resumed after a decision or a retry, or right after the turn
 * was recorded with calls to run): deferred calls that are due are gated again, approved calls run (concurrently),
 * and the phase is finished (see `finishToolPhase`).
 */
export async function advanceToolPhase(
  deps: RuntimeDeps,
  state: RunState,
  assistant: { seq: number; content: ContentBlock[] },
  rows: TranscriptRow[],
): Promise<StepOutcome> {
  const db = storeOf(deps.db);
  const { ref, policy } = state;
  const uses = assistant.content.filter((b): b is Anthropic.ToolUseBlockParam => b.type === "tool_use");
  const recorded = state.recordedCalls?.seq === assistant.seq ? state.recordedCalls.calls : await callsOfMessage(db, ref.id, assistant.seq);
  state.recordedCalls = null;
  let calls: PhaseCall[] = recorded.map((c) => ({ ...c }));
  const w = new StepWrite(state);

  // A deferred call is gated again once its time comes (the condition that deferred it may have cleared): its row
  // is decided afresh; its earlier gate decisions stay in the audit trail.
  const now = Date.now();
  const due = calls.filter((c) => c.status === "DEFERRED" && (!c.nextAttemptAt || c.nextAttemptAt.getTime() <= now));
  let verification: Verification | undefined;
  if (due.length) {
    // A call a person approved is judged on the terms they approved (a reviewer's edit), never the model's.
    const approvedTerms = (u: Anthropic.ToolUseBlockParam) => {
      const d = due.find((c) => c.toolUseId === u.id);
      return d ? { ...u, input: termsToRegate(d) } : u;
    };
    const regated = await gateCalls(db, {
      run: ref,
      policy,
      rows,
      messageSeq: assistant.seq,
      uses: uses.filter((u) => due.some((d) => d.toolUseId === u.id)).map(approvedTerms),
      known: [],
      gates: deps.gates,
      prior: new Map(due.map((d) => [d.toolUseId, { id: d.id, attempts: d.attempts }])),
    });
    verification = regated.verification;
    for (const g of regated.gated) {
      const old = due.find((d) => d.toolUseId === g.toolUseId)!;
      if (old.decidedById && (g.decision === "ask" || g.decision === "allow")) {
        // A person approved it, and its limits allow it again (or would ask a person: one did): their approval stands
        // — a call has one handoff, it cannot be asked for again. It runs under its own terms and key, judged again
        // where it acts. A refusal or a deferral (a fact the gates could not read) is written as any other.
        calls = calls.map((c) => (c.id === old.id ? { ...c, status: "APPROVED", nextAttemptAt: null } : c));
        w.also((s) => approvalStands(s, old.id));
        continue;
      }
      // Judged again, it may now be refused above the ceiling (a deferred call, one sent back where it was to act).
      if (escalates(g)) await openCeilingEscalation(db, w, g, { approved: !!old.decidedById });
      const row = { ...gatedRow(state, g, assistant.seq), input: old.input };
      calls = calls.map((c) => (c.id === old.id ? row : c));
      w.also((s) => regateCall(s, state, old.id, g));
    }
  }

  const runnable = runnableCalls(calls);
  let followUps: Array<{ call: PhaseCall; execution: Execution }> = [];
  const only = runnable.length === 1 ? runnable[0]! : null;
  if (only && getTool(only.name)?.sideEffect && calls.every((c) => c.id === only.id || isSettled(c))) {
    // The phase's last call is an effect (an approval resumed): its transaction also writes the tool_result message,
    // so the effect, its ledger row, its outcome and the result take ONE commit before the next request. If the
    // effect does not succeed, the phase finishes as any other.
    const execution = await executeCall(deps, state, only, {
      verification,
      commitWith: async (tx, settled, activeMs) => {
        w.count({ activeMs });
        const done = calls.map((c) => (c.id === only.id ? { ...c, ...settled, unwritten: settled } : c));
        return finishToolPhase(deps, state, w, { uses, calls: done, followUps: [] }, { tx });
      },
    });
    if (execution.finished) return execution.finished;
    const ran = foldExecutions(calls, [only], [execution]);
    return finishToolPhase(deps, state, w.count({ activeMs: ran.activeMs }), { uses, calls: ran.calls, followUps: ran.followUps });
  }
  if (runnable.length) {
    const ran = await runCalls(deps, state, calls, runnable, { runSpecialist, verification });
    calls = ran.calls;
    followUps = ran.followUps;
    w.count({ activeMs: ran.activeMs });
  }
  return finishToolPhase(deps, state, w, { uses, calls, followUps });
}

/** The size of the run's own messages as far as this process knows them. */
function runBytes(state: RunState): number {
  let n = 0;
  for (const r of state.transcript ?? []) if (r.runId === state.ref.id) n += JSON.stringify(r.content).length;
  return n;
}
