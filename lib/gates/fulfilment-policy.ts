import { formatCents } from "@/lib/money";
import { customerAutoTotal, missingFacts, orderTotal, otherRemedyGiven, totalInWords } from "./refund-policy";
import type { Gate } from "./types";

/**
 * Replacements, on totals like refunds: the value of those already sent for the order, waiting for a decision on it,
 * asked in the same turn, plus this one — automatic up to the limit (and while the customer's automatic replacements
 * within the window stay under theirs, and nothing of the order was refunded); above it a person approves.
 */
export const replacementPolicyGate: Gate = {
  name: "replacement_policy",
  check({ toolName, facts, policy, reviewer }) {
    if (toolName !== "create_replacement" || reviewer) return null;
    const amount = facts.amountCents;
    const t = facts.totals;
    if (amount === undefined || !t) return missingFacts("value", facts.orderNumber);
    const r = policy.rules.replacement;
    const total = orderTotal(amount, t);
    const made = totalInWords(amount, t, facts.orderNumber, "replaced");
    const forCustomer = customerAutoTotal(amount, t);
    const refunded = otherRemedyGiven(t, "replacement", facts.orderNumber);
    if (total <= r.autoMaxCents && forCustomer <= r.autoPerCustomerMaxCents && !refunded) {
      return { decision: "allow", reason: `Replacement within the automatic limits: ${made}.` };
    }
    const why = refunded
      ? refunded
      : total > r.autoMaxCents
        ? total === amount
          ? `a replacement worth ${formatCents(amount)} for ${facts.orderNumber} is over the automatic limit of ${formatCents(r.autoMaxCents)}`
          : `replacements for ${facts.orderNumber} would be worth ${formatCents(total)} (${made}), over the automatic limit of ${formatCents(r.autoMaxCents)}`
        : `the customer's automatic replacements in the last ${t.windowDays} days would be worth ${formatCents(forCustomer)}, over their limit of ${formatCents(r.autoPerCustomerMaxCents)}`;
    return { decision: "ask", requiredApprovals: 1, reason: `A person's approval is needed: ${why}.` };
  },
};

/** Cancellation is destructive: it always waits for a person's confirmation (when the policy says so). */
export const cancellationPolicyGate: Gate = {
  name: "cancellation_policy",
  check({ toolName, facts, policy, reviewer }) {
    if (toolName !== "cancel_order" || reviewer) return null;
    if (facts.orderStatus && facts.orderStatus !== "processing") {
      return {
        decision: "deny",
        reason: `${facts.orderNumber} is ${facts.orderStatus} and can no longer be cancelled. Explain this to the customer.`,
        errorCategory: "business_rule",
      };
    }
    if (!policy.rules.cancellation.requiresApproval) return null;
    return { decision: "ask", requiredApprovals: 1, reason: "Every cancellation needs a person's confirmation." };
  },
};

/** Address changes only while the order has not shipped. */
export const addressChangePolicyGate: Gate = {
  name: "address_change_policy",
  check({ toolName, facts, policy }) {
    if (toolName !== "update_shipping_address" || !facts.orderStatus) return null;
    if (!policy.rules.addressChange.allowedStatuses.includes(facts.orderStatus)) {
      return {
        decision: "deny",
        reason: `${facts.orderNumber} is ${facts.orderStatus}; its address can no longer be changed. Explain this to the customer.`,
        errorCategory: "business_rule",
      };
    }
    return null;
  },
};

/** A reviewer's edit is bounded by their authority for every money-moving tool. */
export const reviewerAuthorityGate: Gate = {
  name: "reviewer_authority",
  check({ reviewer, facts }) {
    if (!reviewer || facts.amountCents === undefined || reviewer.authorityLimitCents === null) return null;
    if (facts.amountCents > reviewer.authorityLimitCents) {
      return {
        decision: "deny",
        reason: `${formatCents(facts.amountCents)} is above ${reviewer.name}'s approval authority of ${formatCents(reviewer.authorityLimitCents)}.`,
        errorCategory: "permission",
      };
    }
    return null;
  },
};
