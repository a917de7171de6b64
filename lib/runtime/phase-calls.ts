// The calls of one tool phase, as the run's tool phase (./tool-phase, ./tool-use-turn) and a specialist's
// (./agent-as-tool) both track them: a gated call as a row, which calls can run now, running them (a specialist's
// call runs the specialist, passed in), and what the phase's step writes about them once they ran.
import { sql } from "kysely";
import type { Store } from "@/lib/db/kysely";
import type { Statement } from "@/lib/store/statement";
import { json } from "@/lib/store/statement";
import { type CallSettlement, settleCall, type ToolCallRow } from "@/lib/store/tool-calls";
import { getTool } from "@/lib/tools/registry";
import type { RuntimeDeps } from "./deps";
import { openEscalation } from "./end";
import { executeCall, type Execution } from "./execution";
import type { GatedCall, UnsavedMoneyCall, Verification } from "./gating";
import type { CallToPark } from "./park";
import type { RunState } from "./run-state";
import type { StepWrite } from "./step-write";

/** A call as the tool phase tracks it: its row, plus what the step must still write about it. */
export interface PhaseCall extends ToolCallRow {
  /** the outcome to write with the step (not yet committed) */
  unwritten?: CallSettlement;
  /** a gate just asked a person about it: its approval handoff is opened with the step */
  toPark?: CallToPark;
  /** the step inserts the call's row (with its outcome) */
  recordedNow?: boolean;
  /** a specialist the call runs waits (for a person or a retry); the call stays APPROVED */
  waitsFor?: Execution["waitsFor"];
  /** a specialist's last step, written with this step */
  write?: StepWrite;
  /** the row a lookup's gates just read, for the call to answer from (see ToolDefinition `factsWithRead`) */
  gatesRead?: unknown;
}

/** A gated call as a row of the tool phase (status and result as the gates decided). */
export function gatedRow(state: RunState, g: GatedCall, messageSeq: number, scope: string | null = null): PhaseCall {
  return {
    id: g.id,
    tenantId: state.ref.tenantId,
    runId: state.ref.id,
    toolUseId: g.toolUseId,
    name: g.name,
    input: g.input,
    effectiveInput: g.effectiveInput,
    status: g.status,
    idempotencyKey: g.idempotencyKey,
    attempts: g.attempts,
    nextAttemptAt: g.nextAttemptAt,
    result: g.result,
    review: null,
    decidedById: null,
    isError: g.isError,
    position: g.position,
    messageSeq,
    gateFacts: g.gateFacts,
    gatesRead: g.gatesRead,
    scope,
    toPark:
      g.handoff?.kind === "approval"
        ? { id: g.id, toolUseId: g.toolUseId, name: g.name, input: g.input, facts: g.handoff.facts, verdict: g.handoff.verdict }
        : undefined,
  };
}

/** Calls that can run now: approved, interrupted mid-run (its key makes a rerun safe), or due for a retry. */
export function runnableCalls<C extends ToolCallRow>(calls: C[], now = Date.now()): C[] {
  return calls.filter(
    (c) =>
      c.status === "APPROVED" ||
      c.status === "EXECUTING" ||
      (c.status === "RETRY_WAIT" && (!c.nextAttemptAt || c.nextAttemptAt.getTime() <= now)),
  );
}

/**
 * Runs a specialist's call: ./agent-as-tool's `runSpecialist`, passed in by the caller — a specialist's own calls run
 * through `runCalls` again, so the recursion is a function handed down, not an import back up.
 */
export type RunSpecialist = (
  deps: RuntimeDeps,
  state: RunState,
  call: PhaseCall,
  agent: string,
  within: string[],
  unsaved: UnsavedMoneyCall[],
) => Promise<Execution>;

/**
 * Runs calls concurrently (the next request waits for all) and folds their outcomes into the phase's calls. A call
 * of a specialist runs the specialist (`runSpecialist`); any other runs its tool (./execution). Specialists run one
 * after another: each gates the money calls it proposes on totals read from the database, so one must have recorded
 * its calls before the next reads them — side by side, two specialists each saw nothing of the other's refund on the
 * same order, and split it past the automatic band or the ceiling.
 */
export async function runCalls(
  deps: RuntimeDeps,
  state: RunState,
  calls: PhaseCall[],
  runnable: PhaseCall[],
  how: {
    runSpecialist: RunSpecialist;
    verification?: Verification;
    /** the specialists these calls were raised in, outermost first (none: the run's own) */
    specialists?: string[];
    /** money calls gated in this phase and not written yet (see UnsavedMoneyCall): shared by its specialists */
    unsaved?: UnsavedMoneyCall[];
  },
) {
  const { runSpecialist, verification, specialists = [], unsaved = [] } = how;
  const executions: Execution[] = new Array(runnable.length);
  const oneAfterAnother = async () => {
    for (const [i, c] of runnable.entries()) {
      const agent = getTool(c.name)?.agent;
      if (agent) executions[i] = await runSpecialist(deps, state, c, agent, specialists, unsaved);
    }
  };
  await Promise.all([
    ...runnable.map(async (c, i) => {
      if (!getTool(c.name)?.agent) executions[i] = await executeCall(deps, state, c, { verification });
    }),
    oneAfterAnother(),
  ]);
  return foldExecutions(calls, runnable, executions);
}

/** The phase's calls with the outcomes of those that ran, the time they took, and the escalations they opened. */
export function foldExecutions(calls: PhaseCall[], runnable: PhaseCall[], executions: Execution[]) {
  const byId = new Map(runnable.map((c, i) => [c.id, executions[i]!]));
  const escalations: Array<{ call: PhaseCall; execution: Execution }> = [];
  let activeMs = 0;
  const out = calls.map((c) => {
    const e = byId.get(c.id);
    if (!e) return c;
    activeMs += e.activeMs;
    const next: PhaseCall = {
      ...c,
      status: e.settled.status,
      result: e.settled.result,
      isError: e.settled.isError,
      attempts: e.settled.attempts,
      nextAttemptAt: e.settled.nextAttemptAt,
    };
    if (!e.written) next.unwritten = e.settled;
    if (e.waitsFor) next.waitsFor = e.waitsFor;
    if (e.write) next.write = e.write;
    if (e.escalation) escalations.push({ call: next, execution: e });
    return next;
  });
  return { calls: out, activeMs, followUps: escalations };
}

/**
 * What a tool phase's step writes about its calls, and where the phase stands: the escalations calls opened (with
 * their outcome), the outcomes not yet written, the last steps of specialists — and whether a call waits for a person
 * (`parked`, with the approvals to open) or for a retry (`retryAt`). Shared by the run's tool phase and a specialist's.
 */
export async function settlePhase(
  db: Store,
  w: StepWrite,
  phaseCalls: PhaseCall[],
  followUps: Array<{ call: PhaseCall; execution: Execution }>,
): Promise<{ calls: PhaseCall[]; toPark: CallToPark[]; parked: boolean; retryAt: Date | null; judgedAgain: boolean }> {
  let calls = phaseCalls;
  for (const { call, execution } of followUps) {
    if (execution.escalation) {
      const handoffId = await openEscalation(db, w, { ...execution.escalation, toolCallId: call.id, actor: "agent" });
      const result = { ...(call.result as object), handoff_id: handoffId };
      calls = calls.map((c) => (c.id === call.id ? { ...c, result, unwritten: c.unwritten ? { ...c.unwritten, result } : undefined } : c));
    }
  }
  for (const c of calls) {
    if (c.write) w.absorb(c.write);
    if (c.unwritten) w.also((s) => settleCall(s, s.unique("settled"), c.id, c.unwritten!));
  }
  const toPark = calls.flatMap((c) => [
    ...(c.toPark ? [c.toPark] : []),
    ...(c.waitsFor && "toPark" in c.waitsFor ? c.waitsFor.toPark : []),
  ]);
  const parked = calls.some((c) => c.status === "PARKED" || (c.waitsFor && "toPark" in c.waitsFor));
  const retries = calls.flatMap((c) =>
    c.status === "RETRY_WAIT" || c.status === "DEFERRED"
      ? [c.nextAttemptAt?.getTime() ?? Date.now() + 1000]
      : c.waitsFor && "retryAt" in c.waitsFor
        ? [c.waitsFor.retryAt.getTime()]
        : [],
  );
  // A call sent back to its gates where it was to act (./judged-again) is judged again at once.
  const judgedAgain = calls.some((c) => c.unwritten?.judgedAgain);
  return { calls, toPark, parked, retryAt: retries.length ? new Date(Math.min(...retries)) : null, judgedAgain };
}

/**
 * What a deferred call is gated again on: the terms a person approved (a reviewer's edit) when one did — never the
 * model's original terms in their place.
 */
export function termsToRegate(call: Pick<PhaseCall, "decidedById" | "effectiveInput" | "input">): unknown {
  return call.decidedById && call.effectiveInput ? call.effectiveInput : call.input;
}

/** A deferred call a person approved, allowed again by its limits: APPROVED again, its terms and key as they were. */
export function approvalStands(s: Statement, callId: string): void {
  s.update(
    s.unique("stands"),
    "ToolCall",
    { status: sql`'APPROVED'::"ToolCallStatus"`, nextAttemptAt: null, updatedAt: sql`now()` },
    sql<boolean>`"ToolCall".id = ${callId} AND "ToolCall".status = 'DEFERRED'`,
  );
}

/** A deferred call decided afresh: its row updated in place, the new gate decisions added. */
export function regateCall(s: Statement, state: RunState, callId: string, g: GatedCall): void {
  const name = s.unique("regated");
  s.update(
    name,
    "ToolCall",
    {
      status: sql`${g.status}::"ToolCallStatus"`,
      gateDecision: sql`${g.decision}::"GateOutcome"`,
      gateReason: g.reason,
      effectiveInput: json(g.effectiveInput),
      idempotencyKey: g.idempotencyKey,
      isError: g.isError,
      result: json(g.result),
      nextAttemptAt: g.nextAttemptAt,
      attempts: g.attempts,
      gateFacts: json(g.gateFacts),
      updatedAt: sql`now()`,
    },
    sql<boolean>`"ToolCall".id = ${callId}`,
  );
  s.insertRecords(
    `${name}_gates`,
    "GateDecision",
    g.records.map((r) => ({ gate: r.gate, decision: r.decision, reason: r.reason })),
    { gate: "text", decision: '"GateOutcome"', reason: "text" },
    {
      id: sql`gen_random_uuid()::text`,
      tenantId: state.ref.tenantId,
      runId: state.ref.id,
      toolCallId: callId,
      toolUseId: g.toolUseId,
      policyVersion: state.policy.version,
    },
  );
}

/** Whether a tool may run before its call is recorded (it only reads: running it again is harmless). */
export const runsBeforeRecording = (name: string) => getTool(name)?.readOnly === true;
