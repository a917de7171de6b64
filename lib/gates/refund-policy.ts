import { formatCents } from "@/lib/money";
import type { Gate } from "./types";

/**
 * Refund bands: automatic up to the limit, a person's approval in the band (two distinct approvers from the
 * four-eyes threshold), refused and escalated above the ceiling. An edit by a reviewer is bounded by their
 * authority instead of the approval band.
 */
export const refundPolicyGate: Gate = {
  name: "refund_policy",
  check({ toolName, facts, policy, reviewer }) {
    if (toolName !== "refund_order" || facts.amountCents === undefined) return null;
    const { autoMaxCents, approvalMaxCents, twoApproversFromCents } = policy.rules.refund;
    const amount = facts.amountCents;
    const refundable = facts.refundableCents;
    if (refundable !== undefined && amount > refundable) {
      return { decision: "deny", reason: `${formatCents(amount)} is more than the ${formatCents(refundable)} still refundable on ${facts.orderNumber}. Look the order up and refund at most what is refundable.`, errorCategory: "business_rule" };
    }
    if (amount > approvalMaxCents) {
      return {
        decision: "deny",
        escalate: true,
        reason: `Refunds above ${formatCents(approvalMaxCents)} cannot be made by the agent or approved in the queue. A person has been asked to review this case; tell the customer so and do not retry.`,
        errorCategory: "business_rule",
      };
    }
    if (reviewer) {
      if (reviewer.authorityLimitCents !== null && amount > reviewer.authorityLimitCents) {
        return { decision: "deny", reason: `${formatCents(amount)} is above ${reviewer.name}'s approval authority of ${formatCents(reviewer.authorityLimitCents)}.`, errorCategory: "permission" };
      }
      return { decision: "allow", reason: `Edited by ${reviewer.name} within their authority.` };
    }
    if (amount <= autoMaxCents) return { decision: "allow", reason: `Refund of ${formatCents(amount)} is within the automatic limit of ${formatCents(autoMaxCents)}.` };
    return {
      decision: "ask",
      requiredApprovals: amount >= twoApproversFromCents ? 2 : 1,
      reason: `Refunds over ${formatCents(autoMaxCents)} need a person's approval${amount >= twoApproversFromCents ? ` (two approvers from ${formatCents(twoApproversFromCents)})` : ""}.`,
    };
  },
};
