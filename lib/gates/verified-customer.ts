import { verificationLevelOf, verificationShortfall } from "@/lib/identity/levels";
import type { Gate } from "./types";

/**
 * Every account action needs a verified customer, persisted for this conversation with an expiry, at the level the
 * action needs (an address change needs more than email and order number), and the order must belong to that
 * customer. Recoverable: the reason says which step was skipped.
 */
export const verifiedCustomerGate: Gate = {
  name: "verified_customer",
  check({ accountAction, state, facts }) {
    if (!accountAction) return null;
    if (!state.verifiedCustomerId) {
      return {
        decision: "deny",
        reason:
          "The customer is not verified. Call verify_customer first with the account email and an order number on that account, or send a one-time code with send_verification_code. A name is never enough.",
        errorCategory: "permission",
        retryable: true,
      };
    }
    if (state.verificationExpiresAt && state.verificationExpiresAt < state.now) {
      return {
        decision: "deny",
        reason: "The customer's verification expired. Call verify_customer again before any account action.",
        errorCategory: "permission",
        retryable: true,
      };
    }
    if (facts.orderNumber && facts.customerId !== state.verifiedCustomerId) {
      return {
        decision: "deny",
        reason: `No order ${facts.orderNumber} was found on the verified customer's account. Ask the customer to check the order number.`,
        errorCategory: "business_rule",
      };
    }
    if (facts.requiredVerificationLevel) {
      const shortfall = verificationShortfall(verificationLevelOf(state.verificationLevel), facts.requiredVerificationLevel);
      if (shortfall) {
        const { message, ...details } = shortfall;
        return { decision: "deny", reason: message, errorCategory: "permission", retryable: true, details };
      }
    }
    return null;
  },
};
