import { formatCents } from "@/lib/money";
import type { Gate } from "./types";

/** Replacements: automatic up to the limit, above it a person approves. */
export const replacementPolicyGate: Gate = {
  name: "replacement_policy",
  check({ toolName, facts, policy, reviewer }) {
    if (toolName !== "create_replacement" || facts.amountCents === undefined || reviewer) return null;
    const limit = policy.rules.replacement.autoMaxCents;
    if (facts.amountCents <= limit) return { decision: "allow", reason: `Replacement worth ${formatCents(facts.amountCents)} is within the automatic limit.` };
    return { decision: "ask", requiredApprovals: 1, reason: `Replacements worth more than ${formatCents(limit)} need a person's approval.` };
  },
};

/** Cancellation is destructive: it always waits for a person's confirmation (when the policy says so). */
export const cancellationPolicyGate: Gate = {
  name: "cancellation_policy",
  check({ toolName, facts, policy, reviewer }) {
    if (toolName !== "cancel_order" || reviewer) return null;
    if (facts.orderStatus && facts.orderStatus !== "processing") {
      return { decision: "deny", reason: `${facts.orderNumber} is ${facts.orderStatus} and can no longer be cancelled. Explain this to the customer.`, errorCategory: "business_rule" };
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
      return { decision: "deny", reason: `${facts.orderNumber} is ${facts.orderStatus}; its address can no longer be changed. Explain this to the customer.`, errorCategory: "business_rule" };
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
      return { decision: "deny", reason: `${formatCents(facts.amountCents)} is above ${reviewer.name}'s approval authority of ${formatCents(reviewer.authorityLimitCents)}.`, errorCategory: "permission" };
    }
    return null;
  },
};
