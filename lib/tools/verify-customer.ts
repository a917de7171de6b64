import { z } from "zod";
import { defineTool } from "./types";
import { normaliseOrderNumber } from "./order-helpers";

export const verifyCustomerInputSchema = z.object({
  email: z.string().email().max(200).optional().describe("Email address on the customer's account"),
  name: z.string().min(1).max(200).optional().describe("Full name, when the customer gave no email"),
  order_number: z.string().min(1).max(40).optional().describe("An order number on the account, e.g. A-1002"),
});

/**
 * Verifies who the customer is: an email or name plus an order number on that account. A name that
 * matches several customers is reported as ambiguous so the agent asks for one more identifier.
 * Verification is persisted on the conversation, scoped to the customer, with an expiry (by the harness).
 */
export const verifyCustomer = defineTool({
  name: "verify_customer",
  description:
    "Verify the customer's identity before any account action. Needs the account email (or full name) AND an order number on that account. Returns status verified, ambiguous (several customers match: ask for the email or an order number), needs_more, or not_found.",
  inputSchema: verifyCustomerInputSchema,
  sideEffect: false,
  accountAction: false,
  async facts(input) {
    return { summary: `Verify ${input.email ?? input.name ?? "customer"}` };
  },
  async execute(input, ctx) {
    if (!input.email && !input.name) {
      return { status: "needs_more", message: "Ask the customer for the email address on their account and an order number." };
    }
    const candidates = await ctx.db.customer.findMany({
      where: {
        tenantId: ctx.tenantId,
        ...(input.email ? { email: input.email.trim().toLowerCase() } : { name: { equals: input.name!.trim(), mode: "insensitive" } }),
      },
      include: { orders: { select: { number: true } } },
    });
    const matching = input.order_number
      ? candidates.filter((c) => c.orders.some((o) => o.number === normaliseOrderNumber(input.order_number!)))
      : candidates;
    if (candidates.length === 0 || (input.order_number && matching.length === 0)) {
      return { status: "not_found", message: "No account matches these details. Ask the customer to check the email and order number." };
    }
    if (matching.length > 1 || (!input.order_number && candidates.length > 1)) {
      return {
        status: "ambiguous",
        matches: candidates.length,
        message: `${candidates.length} customers match. Ask for one more identifier (the account email or an order number) before doing anything.`,
      };
    }
    if (!input.order_number) {
      return { status: "needs_more", message: "Ask for an order number on this account to confirm the customer's identity." };
    }
    const customer = matching[0]!;
    return { status: "verified", customer_id: customer.id, name: customer.name, email: customer.email };
  },
});
