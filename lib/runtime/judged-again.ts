// A money call, judged again where it acts. The gates read a call's totals before the call is saved, so two
// conversations of one customer at once (two tabs, a phone and a laptop) can each be judged on a world where the other
// has not happened yet: each spends the same automatic allowance, or two approvals that each fit the approval band
// together pass the ceiling. So a call of a tool whose limits are on totals (refunds, replacements) is judged again
// inside its effect's transaction, on what is DONE by then (committed effects; what merely waits is not counted, or
// two racing calls would each hold the other back):
//  - allowed automatically: under the customer's lock (every such effect of the customer waits for the one before it;
//    one round trip, with the read), by every policy gate — anything but "allow" and it no longer runs by itself;
//  - approved by a person: on the order as the effect's first statement read it under its row lock (no round trip),
//    with the approver's authority — a refusal above the ceiling stops it, and so do totals that now need more
//    approvers than it has (two approvals that each fit one approver's band, together past the four-eyes threshold).
// A call stopped here did nothing (its transaction rolls back): it goes back to the gates (DEFERRED, due now), which
// judge it on everything — park it for a person, or refuse it and escalate above the ceiling.
import { sql } from "kysely";
import { sendWithNext, type Store } from "@/lib/db/kysely";
import { evaluateGates, POLICY_GATES } from "@/lib/gates/evaluate";
import type { GateInput } from "@/lib/gates/types";
import type { ToolCallRow } from "@/lib/store/tool-calls";
import { type CallFacts, ToolError, type ToolDefinition } from "@/lib/tools/types";
import { knownToolGateInput } from "./gating";
import type { RunState, Verification } from "./run-state";

/** Thrown inside the effect's transaction (it rolls back): the call goes back to its gates; `gate` and `reason` say why. */
export class JudgedAgain extends Error {
  constructor(
    readonly gate: "automatic_band" | "approval_ceiling",
    readonly reason: string,
  ) {
    super(reason);
    this.name = "JudgedAgain";
  }
}

/** What the effect's first statement read that the judgement needs. */
export interface EffectReads {
  /** the approver's authority as read (null: no limit, or no approver) */
  approverLimitCents: number | null;
  /** the tool's `effectRead` answer (the order under its row lock) */
  effectRead?: unknown;
  /** a call parked by a handoff: the approvals it needed, and those that still stand (lib/runtime/execution) */
  requiredApprovals?: number | null;
  standingApprovals?: number;
}

/**
 * In the effect's transaction `tx`, before the tool acts: throws JudgedAgain when the call's limits, on what is done
 * now, no longer let it run. Nothing to do for a tool whose limits are not on totals.
 */
export async function judgeAgainWhereItActs(
  tx: Store,
  a: {
    state: RunState;
    call: Pick<ToolCallRow, "id" | "decidedById">;
    tool: ToolDefinition;
    input: Record<string, unknown>;
    verification: Verification;
    reads: EffectReads;
  },
): Promise<void> {
  const { state, call, tool, input, verification, reads } = a;
  if (!tool.limitedOnTotals || !tool.sideEffect) return;
  const judge = (facts: CallFacts, reviewer?: GateInput["reviewer"]) => {
    const on = { ...verification, now: new Date(), previousCall: null };
    return evaluateGates({ ...knownToolGateInput(tool, input, facts, on, state.policy), reviewer }, POLICY_GATES).verdict;
  };

  if (call.decidedById) {
    const facts = tool.lockedFacts?.(input, reads.effectRead, { policy: state.policy });
    if (!facts) return;
    const verdict = judge(facts, { id: call.decidedById, name: "the approver", authorityLimitCents: reads.approverLimitCents });
    // Only the ceiling: what is still refundable the tool checks itself, under the same lock (a clear failure).
    if (verdict.decision === "deny" && verdict.escalate) {
      throw new JudgedAgain("approval_ceiling", `Judged again where it acts: ${verdict.reason}`);
    }
    // Four eyes on totals: as if nobody had approved it yet, how many people must approve it on what is done by now.
    // Fewer than that approved it: it fails (it cannot be parked again), and the customer can ask again — a new
    // request is judged on these totals and waits for as many approvers as they need.
    if (reads.requiredApprovals === undefined || reads.requiredApprovals === null) return;
    const band = judge(facts);
    const needed = band.decision === "ask" ? (band.requiredApprovals ?? 1) : 0;
    const had = reads.standingApprovals ?? 0;
    if (needed > had) {
      throw new ToolError(
        "permission",
        `Judged again where it acts, on what was done meanwhile: ${band.reason} It had ${had === 1 ? "one approval" : `${had} approvals`}. Nothing was done; tell the customer it now needs ${needed === 2 ? "a second person's approval" : "a person's approval"} and that you can ask for it again.`,
        false,
      );
    }
    return;
  }

  const customer = verification.verifiedCustomerId;
  // No verified customer: the tool refuses on its own (an account action needs one); nothing to total.
  if (!customer) return;
  // The lock goes on the wire with the read and runs first: the read's snapshot is taken once the lock is held, so it
  // sees every effect committed by the customer's calls before this one (one round trip for both).
  await sendWithNext(tx, sql`SELECT pg_advisory_xact_lock(hashtextextended(${`automatic-money:${state.ref.tenantId}:${customer}`}, 0))`);
  const facts = await tool.facts(input, { db: tx, tenantId: state.ref.tenantId, policy: state.policy, callId: call.id, counting: "done" });
  const verdict = judge(facts);
  if (verdict.decision !== "allow") {
    throw new JudgedAgain("automatic_band", `Judged again where it acts, on what was done meanwhile: ${verdict.reason}`);
  }
}
