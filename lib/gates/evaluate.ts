import { withSyncSpan } from "@/lib/telemetry/tracing";
import type { Gate, GateInput, GateVerdict, GateDecisionKind } from "./types";
import { allowlistGate } from "./allowlist";
import { verifiedCustomerGate } from "./verified-customer";
import { identicalCallGate } from "./identical-call";
import { refundPolicyGate } from "./refund-policy";
import { addressChangePolicyGate, cancellationPolicyGate, replacementPolicyGate, reviewerAuthorityGate } from "./fulfilment-policy";
import { log } from "@/lib/log";

/** Every gate runs on every call; order does not matter because precedence decides. */
export const defaultGates: readonly Gate[] = [
  allowlistGate,
  verifiedCustomerGate,
  identicalCallGate,
  refundPolicyGate,
  replacementPolicyGate,
  cancellationPolicyGate,
  addressChangePolicyGate,
  reviewerAuthorityGate,
];

/** The gates that judge a call by the shop's policy alone (no per-conversation state): what a what-if replays. */
export const POLICY_GATES: readonly Gate[] = [
  allowlistGate,
  refundPolicyGate,
  replacementPolicyGate,
  cancellationPolicyGate,
  addressChangePolicyGate,
];

const precedence: Record<GateDecisionKind, number> = { deny: 3, defer: 2, ask: 1, allow: 0 };

export interface GateRecord extends GateVerdict {
  gate: string;
}

export interface GateEvaluation {
  verdict: GateRecord;
  /** Every gate that spoke, for the audit trail. */
  records: GateRecord[];
}

/**
 * Runs every gate and combines them: deny > defer > ask > allow. A gate that throws denies (fail closed).
 * When no gate speaks, the call is allowed (read-only tools, in-policy actions).
 */
export function evaluateGates(input: GateInput, gates: readonly Gate[] = defaultGates): GateEvaluation {
  return withSyncSpan("gates.evaluate", { "tool.name": input.toolName, "policy.version": input.policy.version }, (span) => {
    // A span for each gate only when the trace is recorded: with tracing off (the default) the gates run bare,
    // as they run on every proposed call.
    const evaluation = evaluateGatesInSpan(input, gates, span.isRecording());
    span.setAttribute("gate.decision", evaluation.verdict.decision);
    return evaluation;
  });
}

/** One gate's verdict; a gate that throws denies (fail closed). Traced as `gate.check` with what it said. */
function checkGate(gate: Gate, input: GateInput, traced: boolean): GateVerdict | null {
  try {
    if (!traced) return gate.check(input);
    return withSyncSpan("gate.check", { "gate.name": gate.name }, (span) => {
      const verdict = gate.check(input);
      span.setAttribute("gate.decision", verdict?.decision ?? "none");
      return verdict;
    });
  } catch (err) {
    log.error({ err, gate: gate.name }, "gate threw; failing closed");
    return {
      decision: "deny",
      reason: `A safety check failed (${gate.name}); the action was not taken. Escalate if the customer still needs it.`,
      errorCategory: "business_rule",
    };
  }
}

function evaluateGatesInSpan(input: GateInput, gates: readonly Gate[], traced: boolean): GateEvaluation {
  const records: GateRecord[] = [];
  for (const gate of gates) {
    const verdict = checkGate(gate, input, traced);
    if (verdict) records.push({ ...verdict, gate: gate.name });
  }
  const verdict = records.reduce<GateRecord>((best, r) => (precedence[r.decision] > precedence[best.decision] ? r : best), {
    gate: "default",
    decision: "allow",
    reason: "No rule restricts this call.",
  });
  // Two approvals win over one when several gates ask.
  if (verdict.decision === "ask") {
    verdict.requiredApprovals = Math.max(...records.filter((r) => r.decision === "ask").map((r) => r.requiredApprovals ?? 1));
  }
  return { verdict, records: records.length ? records : [verdict] };
}
