// The lifecycles of a run, a tool call and a handoff, in one place. Every change of a run's phase is checked here
// before it is written (an illegal transition is an error, never a silent write); the SQL that changes a phase
// also requires the row to be in the phase it leaves, so a concurrent change makes the write match nothing.
import type { HandoffStatus, RunPhase, ToolCallStatus } from "@/lib/db/kysely";

export type { HandoffStatus, RunPhase, ToolCallStatus };

export const RUN_PHASES = [
  "RUNNING",
  "WAITING_FOR_APPROVAL",
  "WAITING_FOR_RETRY",
  "COMPLETED",
  "ESCALATED",
  "DEAD_LETTER",
] as const satisfies readonly RunPhase[];

/** Where a run may go from each phase. */
export const RUN_TRANSITIONS: Readonly<Record<RunPhase, readonly RunPhase[]>> = {
  // advancing: it parks, waits for a retry, or ends
  RUNNING: ["WAITING_FOR_APPROVAL", "WAITING_FOR_RETRY", "COMPLETED", "ESCALATED", "DEAD_LETTER"],
  // resume: the last parked call was decided (approved, denied, edited or expired)
  WAITING_FOR_APPROVAL: ["RUNNING"],
  // a retry (of the model or a tool) is due
  WAITING_FOR_RETRY: ["RUNNING"],
  COMPLETED: [],
  ESCALATED: [],
  // a supervisor retries a dead-lettered run
  DEAD_LETTER: ["RUNNING"],
};

export const FINAL_RUN_PHASES: readonly RunPhase[] = ["COMPLETED", "ESCALATED", "DEAD_LETTER"];

export class IllegalTransitionError extends Error {
  constructor(
    readonly what: "run" | "tool call" | "handoff",
    readonly from: string,
    readonly to: string,
  ) {
    super(`illegal ${what} transition ${from} → ${to}`);
    this.name = "IllegalTransitionError";
  }
}

/** Throws unless a run may go from `from` to `to`. */
export function assertRunTransition(from: RunPhase, to: RunPhase): void {
  if (!RUN_TRANSITIONS[from]?.includes(to)) throw new IllegalTransitionError("run", from, to);
}

/** Where a tool call may go from each status. */
export const TOOL_CALL_TRANSITIONS: Readonly<Record<ToolCallStatus, readonly ToolCallStatus[]>> = {
  GATED: ["APPROVED", "PARKED", "DEFERRED", "DENIED"],
  PARKED: ["APPROVED", "DENIED", "EXPIRED"],
  DEFERRED: [], // gated again: the row is replaced by a new decision
  // → DEFERRED: a call its limits no longer allow where it acts, gated again (lib/runtime/judged-again)
  APPROVED: ["EXECUTING", "SUCCEEDED", "FAILED", "RETRY_WAIT", "DEFERRED"],
  EXECUTING: ["SUCCEEDED", "FAILED", "RETRY_WAIT"],
  RETRY_WAIT: ["EXECUTING", "SUCCEEDED", "FAILED", "RETRY_WAIT", "DEFERRED"],
  SUCCEEDED: [],
  FAILED: [],
  DENIED: [],
  EXPIRED: [],
};

/** Terminal statuses: the call has its tool_result. */
export const SETTLED_CALL_STATUSES: readonly ToolCallStatus[] = ["SUCCEEDED", "FAILED", "DENIED", "EXPIRED"];

export function assertToolCallTransition(from: ToolCallStatus, to: ToolCallStatus): void {
  if (from !== to && !TOOL_CALL_TRANSITIONS[from]?.includes(to)) throw new IllegalTransitionError("tool call", from, to);
}

/** Where a handoff may go: a pending one is decided once. */
export const HANDOFF_TRANSITIONS: Readonly<Record<HandoffStatus, readonly HandoffStatus[]>> = {
  PENDING: ["APPROVED", "DENIED", "EDITED", "EXPIRED", "RESOLVED", "CANCELLED"],
  APPROVED: [],
  DENIED: [],
  EDITED: [],
  EXPIRED: [],
  RESOLVED: [],
  CANCELLED: [],
};

export function assertHandoffTransition(from: HandoffStatus, to: HandoffStatus): void {
  if (!HANDOFF_TRANSITIONS[from]?.includes(to)) throw new IllegalTransitionError("handoff", from, to);
}
