import { randomUUID } from "node:crypto";
import { z } from "zod";
import { defineTool, ToolError } from "./types";
import { effectOfCall, lockedRefundFacts, moneyFacts, orderEffectRead, requireLockedOrder } from "./order-helpers";
import { formatCents } from "@/lib/money";
import { sendWithNext } from "@/lib/db/kysely";

export const refundOrderInputSchema = z.object({
  order_number: z.string().min(1).max(40).describe("The order to refund, e.g. A-1002"),
  amount_cents: z.number().int().positive().max(100_000_000).describe("Amount to refund, in cents (25000 = $250.00)"),
  reason: z.string().min(1).max(500).describe("Why, in the customer's words (e.g. arrived damaged)"),
});

const summaryOf = (input: { order_number: string; amount_cents: number }) =>
  `Refund ${formatCents(input.amount_cents)} on ${input.order_number.toUpperCase()}`;

export const refundOrder = defineTool({
  name: "refund_order",
  description:
    "Refund part or all of a verified customer's order to the original payment method. Amount in cents. Refunds above the shop's automatic limit wait for a person's approval; the result then tells you what was decided.",
  inputSchema: refundOrderInputSchema,
  sideEffect: true,
  accountAction: true,
  limitedOnTotals: true,
  facts: (input, ctx) =>
    moneyFacts(ctx.db, {
      tenantId: ctx.tenantId,
      tool: "refund_order",
      orderNumber: input.order_number,
      amountCents: input.amount_cents,
      callId: ctx.callId,
      counting: ctx.counting,
      windowDays: ctx.policy.rules.refund.autoPerCustomerWindowDays,
      summary: summaryOf(input),
    }),
  // An approved refund, judged again on the order as its effect locked it: the ceiling holds across conversations.
  lockedFacts: (input, effectRead, ctx) =>
    lockedRefundFacts(effectRead, {
      orderNumber: input.order_number,
      amountCents: input.amount_cents,
      summary: summaryOf(input),
      windowDays: ctx.policy.rules.refund.autoPerCustomerWindowDays,
    }),
  // The order, under its row lock, comes with the effect transaction's first statement (one round trip fewer).
  effectRead: orderEffectRead,
  async execute(input, ctx) {
    return effectOfCall(ctx, "refund_order", input, async (tx) => {
      // Under the order's row lock: what is still refundable cannot change until this commits.
      const order = await requireLockedOrder(tx, ctx, input.order_number);
      const refundable = order.totalCents - order.refundedCents;
      if (input.amount_cents > refundable) {
        throw new ToolError("business_rule", `Only ${formatCents(refundable)} of ${order.number} is still refundable.`, false, {
          refundable_cents: refundable,
        });
      }
      // Nothing here waits for the write's answer (the refund's id is ours): it goes on the wire with the statement
      // that records the outcome and commits (lib/db/kysely `sendWithNext`) — one round trip fewer per refund.
      const refundId = randomUUID();
      const write = tx
        .with("o", (db) =>
          db
            .updateTable("Order")
            .set((eb) => ({ refundedCents: eb("refundedCents", "+", input.amount_cents) }))
            .where("id", "=", order.id),
        )
        .insertInto("Refund")
        .values({
          id: refundId,
          tenantId: ctx.tenantId,
          orderId: order.id,
          amountCents: input.amount_cents,
          reason: input.reason,
          idempotencyKey: ctx.idempotencyKey,
        });
      await sendWithNext(tx, write);
      return {
        status: "refunded",
        refund_id: refundId,
        order_number: order.number,
        amount_cents: input.amount_cents,
        amount: formatCents(input.amount_cents),
      };
    });
  },
});
