import type { EndPhase } from "./end";

/** What a step of a run leads to: the loop goes on, or the run waits (for a person or a retry), or it ended. */
export type StepOutcome =
  | { kind: "next" }
  | { kind: "parked" }
  | { kind: "waiting_for_retry"; at: Date }
  | { kind: "ended"; phase: EndPhase; followUpRunId: string | null };
