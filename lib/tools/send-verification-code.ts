import { z } from "zod";
import { requestVerificationCode } from "@/lib/identity/verification";
import { defineTool } from "./types";

export const sendVerificationCodeInputSchema = z.object({
  email: z.string().trim().min(1).max(254).describe("The email address the customer says is on their account"),
});

/**
 * Sends a one-time code to an account's email — the way to verify for a customer without an order number at
 * hand. The answer is the same whether or not the account exists.
 */
export const sendVerificationCode = defineTool({
  name: "send_verification_code",
  description:
    "Email a one-time 6-digit code to the customer's account address, for when they have no order number at hand or ask for a code. Always answers the same, whether or not an account exists; never say which. Then ask the customer for the code and call verify_customer with the email and the code.",
  inputSchema: sendVerificationCodeInputSchema,
  sideEffect: false,
  // It records attempts (and codes): that state commits with the call's outcome, in the runtime's transaction.
  transactional: true,
  accountAction: false,
  async facts(input) {
    return { summary: `Send a verification code to ${input.email}` };
  },
  execute: (input, ctx) =>
    requestVerificationCode(
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
