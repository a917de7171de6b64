import { z } from "zod";
import { verifyIdentity } from "@/lib/identity/verification";
import { defineTool } from "./types";

export const verifyCustomerInputSchema = z.object({
  email: z.string().trim().min(1).max(254).describe("The email address on the customer's account, as the customer gave it"),
  order_number: z.string().trim().min(1).max(40).optional().describe("An order number on that account, e.g. A-1002"),
  postcode: z
    .string()
    .trim()
    .min(1)
    .max(20)
    .optional()
    .describe("With order_number: the postcode of that order's current delivery address. Needed before changing a delivery address."),
  code: z.string().trim().min(1).max(20).optional().describe("Instead of order_number: the 6-digit code the customer received by email"),
});

/**
 * Verifies who the customer is by something a stranger can't know — never by a name: the account email with an
 * order number on that account (and the postcode, for address changes), or with a one-time code. Every failure
 * gets the same answer. The harness persists a verification on the conversation, with its level and an expiry.
 */
export const verifyCustomer = defineTool({
  name: "verify_customer",
  description:
    "Verify the customer's identity before any account action: the account email AND an order number on that account, or the email AND the 6-digit code from send_verification_code. A name is never enough. Add the postcode of the order's current delivery address before an address change. Returns status verified (with its level), not_verified (the same answer whatever was wrong; never tell the customer which detail failed), or needs_more.",
  inputSchema: verifyCustomerInputSchema,
  sideEffect: false,
  // It records attempts (and codes): that state commits with the call's outcome, in the runtime's transaction.
  transactional: true,
  accountAction: false,
  async facts(input) {
    return { summary: `Verify ${input.email}${input.code ? " with a one-time code" : input.postcode ? " with order and postcode" : ""}` };
  },
  execute: (input, ctx) =>
    verifyIdentity(
      {
        db: ctx.db,
        tenantId: ctx.tenantId,
        conversationId: ctx.conversationId,
        toolCallId: ctx.toolCallId,
        afterCommit: ctx.afterCommit,
        store: ctx.store,
      },
      input,
    ),
});
