import type { Lease } from "@/lib/store/lease";
import type { RunCountersState, RunDone, RunStateRow } from "@/lib/store/runs";
import type { TranscriptRow } from "@/lib/store/transcript";
import type { Policy } from "@/lib/policy/policy";
import { noteCommitted } from "@/lib/store/transcript";
import { loadPolicy } from "./policy";
import type { Store } from "@/lib/db/kysely";

export type { RunCountersState, RunDone, RunStateRow };

/** Which run, of which tenant and conversation. */
export interface RunRef {
  id: string;
  tenantId: string;
  conversationId: string;
}

/**
 * What one advance of a run works with. Rebuilt from the database each time a worker claims the run; while it
 * holds the lease nobody else writes the run, so this copy stays true and saves a read per step.
 */
export interface RunState {
  ref: RunRef;
  lease: Lease;
  policy: Policy;
  model: string;
  counters: RunCountersState;
  /**
   * The transcript as this advance knows it, or null: read it. While the run is active only its lease holder
   * appends to the transcript (customer text and staff replies are queued outside it), so a step that appended
   * extends this copy (`extendTranscript`); any other path drops it.
   */
  transcript: TranscriptRow[] | null;
  /** What the run has done (for the stop check): read with the state, brought up to date by each tool phase. */
  done: RunDone;
  /** Model spend around the run (micro-USD), as of the claim, kept current with what this advance spends. */
  spend: { conversation: number; shopDay: number };
  /** The calls of the tool_use message this advance has just recorded (so the tool phase need not read them). */
  recordedCalls: { seq: number; calls: import("@/lib/store/tool-calls").ToolCallRow[] } | null;
}

/** A run as the caller that created it knows it: its state, and the customer message that started it. */
export interface CreatedRun {
  state: RunStateRow;
  messageSeq: number;
}

/** A new run's state as its creator writes it (every counter at zero), so whoever advances it need not read it. */
export function newRunStateRow(a: {
  id: string;
  tenantId: string;
  conversationId: string;
  policy: Policy;
  model: string;
  /** model spend so far: the conversation's (its earlier runs) and the shop's today, as the creator read them */
  spend?: { conversation: number; shopDay: number };
}): RunStateRow {
  const b = a.policy.rules.budgets;
  return {
    id: a.id,
    tenantId: a.tenantId,
    conversationId: a.conversationId,
    policyVersion: a.policy.version,
    model: a.model,
    phase: "RUNNING",
    turnsUsed: 0,
    maxTurns: b.maxTurns,
    inputTokens: 0,
    outputTokens: 0,
    tokenBudget: b.tokenBudget,
    costMicros: 0,
    activeMs: 0,
    requestAttempts: 0,
    maxTokensRetries: 0,
    pauseTurns: 0,
    corrections: 0,
    effects: [],
    acted: 0,
    conversationCostMicros: a.spend?.conversation ?? 0,
    shopDayCostMicros: a.spend?.shopDay ?? 0,
  };
}

/** The state an advance works with, from the run's row (as claimed, created or read). */
export async function runStateFrom(db: Store, row: RunStateRow, lease: Lease): Promise<RunState> {
  const {
    id,
    tenantId,
    conversationId,
    policyVersion,
    model,
    effects,
    acted,
    phase: _phase,
    conversationCostMicros,
    shopDayCostMicros,
    ...counters
  } = row;
  return {
    ref: { id, tenantId, conversationId },
    lease,
    policy: await loadPolicy(db, tenantId, policyVersion),
    model,
    counters,
    transcript: null,
    done: { effects, acted },
    spend: { conversation: Number(conversationCostMicros), shopDay: Number(shopDayCostMicros) },
    recordedCalls: null,
  };
}

/** After a step appended `rows` (committed, in order): this advance's copy, and the process's cache, grow. */
export function extendTranscript(state: RunState, ...rows: TranscriptRow[]): void {
  for (const row of rows) {
    noteCommitted(state.ref.conversationId, row);
    const last = state.transcript?.[state.transcript.length - 1];
    if (state.transcript && (!last || last.seq < row.seq)) state.transcript.push(row);
    else state.transcript = null;
  }
}

/** Whether a call counts in `acted`: it succeeded and was not the identity check. */
export const actedCall = (c: { status: string; name: string }) => c.status === "SUCCEEDED" && c.name !== "verify_customer";
