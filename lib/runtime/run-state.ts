import type { Lease } from "@/lib/store/lease";
import type { RunCountersState, RunDone, RunStateRow } from "@/lib/store/runs";
import type { TranscriptRow } from "@/lib/store/transcript";
import type { Policy } from "@/lib/policy/policy";
import { loadTranscript, noteCommitted } from "@/lib/store/transcript";
import { loadPolicy } from "./policy";
import type { Store } from "@/lib/db/kysely";

export type { RunCountersState, RunDone, RunStateRow };

/** The conversation's verification: who the visitor proved to be, how, and until when. */
export interface Verification {
  verifiedCustomerId: string | null;
  verificationExpiresAt: Date | null;
  verificationLevel: string | null;
}

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
  /** A step whose commit is still in flight while the next model request goes out (see `InFlightStep`). */
  inFlight: InFlightStep | null;
  /**
   * The conversation's verification as this advance knows it (the intake that started the run returned it), for the
   * gates — or null: read it. Within a run only verify_customer changes it, and every call that writes drops this
   * copy before it runs; the widget may meanwhile renew the same customer's verification, and a gate judging on the
   * expiry it knew at worst asks again. A side effect still reads it afresh in its own transaction.
   */
  verification: Verification | null;
}

/**
 * A step written while the next model request is already on its way, so the commit's wait for the disk overlaps the
 * model's work instead of preceding it. Only a step that changed nothing in the world (a turn whose calls were all
 * read-only) is written this way. The request is built from `rows` as the step wrote them; its answer is acted on only
 * once `committed` resolves (nothing is shown, written or run before), and only if the committed rows are the ones
 * that were sent — customer text that joined the results inside the statement means the request is asked again.
 */
export interface InFlightStep {
  /** the rows the step appends, as the request shows them (their seqs are provisional) */
  rows: TranscriptRow[];
  /** resolves once the step committed (this advance's transcript then holds the committed rows); rejects if it failed */
  committed: Promise<TranscriptRow[]>;
}

/**
 * A run as the caller that created it knows it: its state, the customer message that started it, and the
 * conversation's verification as that statement left it.
 */
export interface CreatedRun {
  state: RunStateRow;
  messageSeq: number;
  verification?: Verification;
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
    inFlight: null,
    verification: null,
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

/**
 * Waits for a step in flight to commit (rethrowing what made it fail: a lost lease, a crash of the database) and
 * returns the transcript as committed, and whether the committed rows are the ones the request was built from.
 */
export async function landInFlight(db: Store, state: RunState, step: InFlightStep): Promise<{ rows: TranscriptRow[]; asSent: boolean }> {
  const written = await step.committed;
  const asSent =
    written.length === step.rows.length &&
    written.every((row, i) => {
      const sent = step.rows[i]!;
      return row.role === sent.role && (row.content as unknown[]).length === (sent.content as unknown[]).length;
    });
  state.transcript ??= await loadTranscript(db, state.ref.conversationId);
  return { rows: state.transcript, asSent };
}
