// An automatic money call, judged again where it acts. The gates read a call's totals before the call is saved, so
// two conversations of one customer at once (two tabs, a phone and a laptop) can each be judged on a world where
// the other has not happened yet — and each spend the same automatic allowance. So a call no person approved, of a
// tool whose limits are on totals (refunds, replacements), is judged again inside its effect's transaction: under
// the customer's lock (every such effect for the customer waits for the one before it) and on what is DONE by then
// (committed effects; what merely waits is not counted, or two racing calls would each hold the other back). When
// the band no longer allows it, nothing is done: the call goes back to the gates (DEFERRED, due now), which judge it
// on everything — and park it for a person.
import { sql } from "kysely";
import { sendWithNext, type Store } from "@/lib/db/kysely";
import { evaluateGates, POLICY_GATES } from "@/lib/gates/evaluate";
import type { ToolCallRow } from "@/lib/store/tool-calls";
import type { ToolDefinition } from "@/lib/tools/types";
import { canonicalJson } from "./idempotency";
import type { Verification } from "./gating";
import type { RunState } from "./run-state";

/** The gate a call judged again records its new decision under (the audit trail's GateDecision.gate). */
export const AUTOMATIC_BAND_GATE = "automatic_band";

/** Thrown inside the effect's transaction (it rolls back): the call must be judged again, for `reason`. */
export class AutomaticBandChanged extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "AutomaticBandChanged";
  }
}

/** Whether the call is one to judge again: automatic (no person decided it), of a tool limited on totals. */
export function judgedAgainWhereItActs(tool: ToolDefinition, call: Pick<ToolCallRow, "decidedById">): boolean {
  return !!tool.limitedOnTotals && tool.sideEffect && !call.decidedById;
}

/**
 * In the effect's transaction `tx`, before the tool acts: takes the customer's lock, reads the call's facts counting
 * what is done, and runs the policy's gates on them. Throws AutomaticBandChanged when they no longer allow the call.
 */
export async function assertStillAutomatic(
  tx: Store,
  a: { state: RunState; call: Pick<ToolCallRow, "id">; tool: ToolDefinition; input: Record<string, unknown>; verification: Verification },
): Promise<void> {
  const { state, call, tool, input, verification } = a;
  const customer = verification.verifiedCustomerId;
  // No verified customer: the tool refuses on its own (an account action needs one); nothing to total.
  if (!customer) return;
  // The lock goes on the wire with the read and runs first: the read's snapshot is taken once the lock is held, so it
  // sees every effect committed by the customer's calls before this one (one round trip for both).
  await sendWithNext(tx, sql`SELECT pg_advisory_xact_lock(hashtextextended(${`automatic-money:${state.ref.tenantId}:${customer}`}, 0))`);
  const facts = await tool.facts(input, { db: tx, tenantId: state.ref.tenantId, policy: state.policy, callId: call.id, counting: "done" });
  const { verdict } = evaluateGates(
    {
      toolName: tool.name,
      input,
      canonicalInput: canonicalJson(input),
      facts,
      isKnownTool: true,
      accountAction: tool.accountAction,
      sideEffect: tool.sideEffect,
      state: { ...verification, now: new Date(), previousCall: null },
      policy: state.policy,
    },
    POLICY_GATES,
  );
  if (verdict.decision !== "allow") {
    throw new AutomaticBandChanged(`Judged again where it acts, on what was done meanwhile: ${verdict.reason}`);
  }
}
