// A model turn that proposes tool calls. The calls are gated as soon as the model proposes them, and the turn — its
// model call, the assistant message, the calls with every gate's decision — is recorded in ONE statement together
// with what follows when nothing else has to run first:
//  - every call refused, or allowed and read-only (run at once, before recording: running them again is harmless)
//    → the results message too: the tool phase is done;
//  - a call a person must decide and nothing else to run → the run parks in the same statement (./park);
//  - otherwise the turn is recorded with its calls, and the tool phase runs the approved ones (./tool-phase).
// A refusal above the policy ceiling opens its escalation in the same statement.
import type Anthropic from "@anthropic-ai/sdk";
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { addToolCalls } from "@/lib/store/tool-calls";
import type { ContentBlock, TranscriptRow } from "@/lib/store/transcript";
import { runSpecialist } from "./agent-as-tool";
import type { RuntimeDeps } from "./deps";
import { openCeilingEscalation } from "./end";
import { failpoint } from "./failpoints";
import { escalates, gateCalls } from "./gating";
import { openApprovals } from "./park";
import { extendTranscript, type RunState } from "./run-state";
import type { StepOutcome } from "./step";
import type { StepWrite } from "./step-write";
import { gatedRow, type PhaseCall, runCalls, runnableCalls, runsBeforeRecording } from "./phase-calls";
import { finishToolPhase } from "./tool-phase";

export async function recordToolUseTurn(
  deps: RuntimeDeps,
  state: RunState,
  rows: TranscriptRow[],
  uses: Anthropic.ToolUseBlockParam[],
  w: StepWrite,
  content: ContentBlock[],
): Promise<StepOutcome> {
  const db = storeOf(deps.db);
  const { ref, policy } = state;
  const { verification, gated } = await gateCalls(db, {
    run: ref,
    policy,
    rows,
    messageSeq: Number.POSITIVE_INFINITY,
    uses,
    known: [],
    gates: deps.gates,
    verification: state.verification,
  });

  // A refusal that must not be retried around (above the refund ceiling) starts the escalation itself.
  for (const g of gated) if (escalates(g)) await openCeilingEscalation(db, w, g);

  // Rows as the tool phase tracks them; the seq is filled in once the statement has numbered the message.
  let calls: PhaseCall[] = gated.map((g) => ({ ...gatedRow(state, g, 0), recordedNow: true }));
  const others = runnableCalls(calls).filter((c) => !runsBeforeRecording(c.name));
  const readOnly = runnableCalls(calls).filter((c) => runsBeforeRecording(c.name));
  let followUps: Awaited<ReturnType<typeof runCalls>>["followUps"] = [];
  if (readOnly.length && !others.length) {
    // Nothing else has to run first: read-only calls run now and are recorded with their outcome.
    const ran = await runCalls(deps, state, calls, readOnly, { runSpecialist, verification });
    calls = ran.calls.map((c) => ({ ...c, unwritten: undefined }));
    followUps = ran.followUps;
    w.count({ activeMs: ran.activeMs });
  }

  const assistant = w.message({ role: "assistant", author: "AGENT", content });
  const byId = new Map(calls.map((c) => [c.id, c]));
  w.also((s) =>
    addToolCalls(
      s,
      "calls",
      ref,
      gated.map((g) => {
        const c = byId.get(g.id)!;
        return { ...g, status: c.status, result: c.result, isError: c.isError, attempts: c.attempts, nextAttemptAt: c.nextAttemptAt };
      }),
      sql`(SELECT seq FROM ${sql.raw(assistant)})`,
      policy.version,
    ),
  );

  if (others.length) {
    // Approved calls with effects (or that learn something) run in the tool phase, after this is recorded. A call a
    // person must decide gets its approval in this statement: a parked call never exists without its handoff.
    await openApprovals(
      deps,
      w,
      calls.flatMap((c) => (c.toPark ? [c.toPark] : [])),
    );
    const row = await w.run<{ seq: number }>(db, sql`seq FROM ${sql.raw(assistant)}`);
    state.recordedCalls = { seq: row!.seq, calls: calls.map((c) => ({ ...c, toPark: undefined, messageSeq: row!.seq })) };
    extendTranscript(state, { seq: row!.seq, role: "assistant", content, author: "AGENT", runId: ref.id });
    failpoint("after-gate");
    return { kind: "next" };
  }
  // Nothing but reads ran (or nothing ran): the next request may go out while this is committed.
  return finishToolPhase(deps, state, w, { uses, calls, followUps, assistantContent: content, overlapNextRequest: !followUps.length });
}
