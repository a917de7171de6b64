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
  // One span per evaluation with an event per gate: gates are synchronous and take microseconds, so a span each
  // would add volume without timing worth seeing; the events keep every gate's decision on the timeline.
  return withSyncSpan("gates.evaluate", { "tool.name": input.toolName, "policy.version": input.policy.version }, (span) => {
    const evaluation = evaluateGatesInSpan(input, gates);
    for (const r of evaluation.records) span.addEvent("gate", { "gate.name": r.gate, "gate.decision": r.decision });
    span.setAttribute("gate.decision", evaluation.verdict.decision);
    return evaluation;
  });
}
function evaluateGatesInSpan(input: GateInput, gates: readonly Gate[]): GateEvaluation {
  const records: GateRecord[] = [];
  for (const gate of gates) {
    let verdict: GateVerdict | null;
    try {
      verdict = gate.check(input);
    } catch (err) {
      verdict = {
        decision: "deny",
        reason: `A safety check failed (${gate.name}); the action was not taken. Escalate if the customer still needs it.`,
        errorCategory: "business_rule",
      };
      log.error({ err, gate: gate.name }, "gate threw; failing closed");
    }
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
