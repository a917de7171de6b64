import { z } from "zod";
import { defineTool, ToolError } from "./types";
import { effectOfCall, orderFacts, requireOwnedOrder } from "./order-helpers";
import { formatCents } from "@/lib/money";

export const refundOrderInputSchema = z.object({
  order_number: z.string().min(1).max(40).describe("The order to refund, e.g. A-1002"),
  amount_cents: z.number().int().positive().max(100_000_000).describe("Amount to refund, in cents (25000 = $250.00)"),
  reason: z.string().min(1).max(500).describe("Why, in the customer's words (e.g. arrived damaged)"),
});

export const refundOrder = defineTool({
  name: "refund_order",
  description:
    "Refund part or all of a verified customer's order to the original payment method. Amount in cents. Refunds above the shop's automatic limit wait for a person's approval; the result then tells you what was decided.",
  inputSchema: refundOrderInputSchema,
  sideEffect: true,
  accountAction: true,
  facts: (input, ctx) =>
    orderFacts(ctx.db, ctx.tenantId, input.order_number, `Refund ${formatCents(input.amount_cents)} on ${input.order_number.toUpperCase()}`, input.amount_cents),
  async execute(input, ctx) {
    return effectOfCall(ctx, "refund_order", input, async (tx) => {
      const order = await requireOwnedOrder(tx, ctx.tenantId, input.order_number, ctx.verifiedCustomerId);
      const refundable = order.totalCents - order.refundedCents;
      if (input.amount_cents > refundable) {
        throw new ToolError("business_rule", `Only ${formatCents(refundable)} of ${order.number} is still refundable.`, false, { refundable_cents: refundable });
      }
      const refund = await tx.refund.create({
        data: { tenantId: ctx.tenantId, orderId: order.id, amountCents: input.amount_cents, reason: input.reason, idempotencyKey: ctx.idempotencyKey },
      });
      await tx.order.update({ where: { id: order.id }, data: { refundedCents: { increment: input.amount_cents } } });
      return {
        status: "refunded",
        refund_id: refund.id,
        order_number: order.number,
        amount_cents: input.amount_cents,
        amount: formatCents(input.amount_cents),
      };
    });
  },
});
