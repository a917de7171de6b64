import { formatCents } from "@/lib/money";
import type { MoneyTotals } from "@/lib/tools/types";
import type { Gate, GateVerdict } from "./types";

/** "$90.00 now; $180.00 already refunded on A-1002; $40.00 waiting for a decision": what a money total is made of. */
export function totalInWords(amount: number, t: MoneyTotals, order: string | undefined, done: string): string {
  const parts = [`${formatCents(amount)} now`];
  if (t.orderDoneCents) parts.push(`${formatCents(t.orderDoneCents)} already ${done} on ${order}`);
  if (t.orderPendingCents) parts.push(`${formatCents(t.orderPendingCents)} waiting for a decision on ${order}`);
  if (t.sameTurnCents) parts.push(`${formatCents(t.sameTurnCents)} asked in the same turn`);
  return parts.join("; ");
}

/** The order's total once this call ran: what was done, what waits, what the same turn asks, and this. */
export const orderTotal = (amount: number, t: MoneyTotals) => t.orderDoneCents + t.orderPendingCents + t.sameTurnCents + amount;

/** What was (or will be) done automatically for the customer within the window, with this call. */
export const customerAutoTotal = (amount: number, t: MoneyTotals) => t.customerAutoCents + t.customerPendingAutoCents + amount;

/**
 * Money back and the goods again: a refund of an order already replaced, or a replacement of one already refunded,
 * waits for a person whatever its size — "what was already done on the order" counts across both remedies.
 */
export function otherRemedyGiven(t: MoneyTotals, kind: "refund" | "replacement", order: string | undefined): string | null {
  if (!t.orderOtherRemedyCents) return null;
  return kind === "refund"
    ? `${order} was already replaced (worth ${formatCents(t.orderOtherRemedyCents)}), and a refund on top is never automatic`
    : `${formatCents(t.orderOtherRemedyCents)} of ${order} was already refunded, and a replacement on top is never automatic`;
}

/** A fact the rule needs is missing: never a clear (fail closed). */
export function missingFacts(what: string, order: string | undefined): GateVerdict {
  return {
    decision: "deny",
    reason: `The ${what} of ${order ?? "the order"} could not be established, so nothing was done. Look the order up and try again; if it keeps failing, escalate_to_human.`,
    errorCategory: "business_rule",
    retryable: true,
  };
}

/**
 * Refund bands, on TOTALS: what was already refunded on the order, plus what waits for a decision on it, plus the
 * other refunds of the same model turn, plus this one. Automatic up to the limit (and while the customer's automatic
 * refunds within the window stay under theirs); a person's approval in the band (two different approvers from the
 * four-eyes threshold); refused and escalated above the ceiling. Splitting a request never gets around a band. An edit
 * by a reviewer is bounded by their authority instead of the approval band.
 */
export const refundPolicyGate: Gate = {
  name: "refund_policy",
  check({ toolName, facts, policy, reviewer }) {
    if (toolName !== "refund_order") return null;
    const amount = facts.amountCents;
    const t = facts.totals;
    if (amount === undefined || facts.refundableCents === undefined || !t) return missingFacts("refund status", facts.orderNumber);
    const r = policy.rules.refund;
    const order = facts.orderNumber;
    const waiting = t.orderPendingCents + t.sameTurnCents;
    if (amount + waiting > facts.refundableCents) {
      return {
        decision: "deny",
        reason: `${formatCents(amount)} is more than the ${formatCents(Math.max(0, facts.refundableCents - waiting))} still refundable on ${order}${
          waiting ? ` (${formatCents(waiting)} of it already waits for a decision or is asked in this turn)` : ""
        }. Look the order up and refund at most what is refundable.`,
        errorCategory: "business_rule",
      };
    }
    const total = orderTotal(amount, t);
    const made = totalInWords(amount, t, order, "refunded");
    if (total > r.approvalMaxCents) {
      return {
        decision: "deny",
        escalate: true,
        reason: `Refunds on ${order} would total ${formatCents(total)} (${made}), above ${formatCents(r.approvalMaxCents)}: the agent cannot make them and they cannot be approved in the queue. A person has been asked to review this case; tell the customer so and do not retry.`,
        errorCategory: "business_rule",
      };
    }
    if (reviewer) {
      if (reviewer.authorityLimitCents !== null && amount > reviewer.authorityLimitCents) {
        return {
          decision: "deny",
          reason: `${formatCents(amount)} is above ${reviewer.name}'s approval authority of ${formatCents(reviewer.authorityLimitCents)}.`,
          errorCategory: "permission",
        };
      }
      return { decision: "allow", reason: `Edited by ${reviewer.name} within their authority (${made}).` };
    }
    const forCustomer = customerAutoTotal(amount, t);
    const replaced = otherRemedyGiven(t, "refund", order);
    if (total <= r.autoMaxCents && forCustomer <= r.autoPerCustomerMaxCents && !replaced) {
      return {
        decision: "allow",
        reason: `Refund within the automatic limits: ${made}; total ${formatCents(total)} of ${formatCents(r.autoMaxCents)}.`,
      };
    }
    const two = total >= r.twoApproversFromCents;
    const why = replaced
      ? replaced
      : total > r.autoMaxCents
        ? total === amount
          ? `a refund of ${formatCents(amount)} on ${order} is over the automatic limit of ${formatCents(r.autoMaxCents)}`
          : `refunds on ${order} would total ${formatCents(total)} (${made}), over the automatic limit of ${formatCents(r.autoMaxCents)}`
        : `the customer's automatic refunds in the last ${t.windowDays} days would reach ${formatCents(forCustomer)}, over their limit of ${formatCents(r.autoPerCustomerMaxCents)}`;
    return {
      decision: "ask",
      requiredApprovals: two ? 2 : 1,
      reason: `A person's approval is needed: ${why}${two ? ` (two approvers from ${formatCents(r.twoApproversFromCents)})` : ""}.`,
    };
  },
};
