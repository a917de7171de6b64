import { randomUUID } from "node:crypto";
import { z } from "zod";
import { defineTool, ToolError } from "./types";
import { effectOfCall, orderFacts, orderEffectRead, requireLockedOrder } from "./order-helpers";
import { formatCents } from "@/lib/money";
import { sendWithNext } from "@/lib/db/kysely";

export const cancelOrderInputSchema = z.object({
  order_number: z.string().min(1).max(40).describe("The order to cancel (only orders still processing)"),
  reason: z.string().min(1).max(500).describe("Why the customer wants to cancel"),
});

export const cancelOrder = defineTool({
  name: "cancel_order",
  description:
    "Cancel an order that is still processing and refund it in full. Destructive: every cancellation waits for a person's confirmation; the result tells you what was decided.",
  inputSchema: cancelOrderInputSchema,
  sideEffect: true,
  accountAction: true,
  async facts(input, ctx) {
    const facts = await orderFacts(ctx.db, ctx.tenantId, input.order_number, `Cancel ${input.order_number.toUpperCase()}`);
    return {
      ...facts,
      amountCents: facts.orderTotalCents,
      summary: `Cancel ${facts.orderNumber}${facts.orderTotalCents ? ` (${formatCents(facts.orderTotalCents)})` : ""}`,
    };
  },
  // The order, under its row lock, comes with the effect transaction's first statement; the writes go with the
  // statement that records the outcome (lib/db/kysely `sendWithNext`): no round trip of their own.
  effectRead: orderEffectRead,
  async execute(input, ctx) {
    return effectOfCall(ctx, "cancel_order", input, async (tx) => {
      const order = await requireLockedOrder(tx, ctx, input.order_number);
      if (order.status !== "processing") {
        throw new ToolError("business_rule", `${order.number} is ${order.status} and can no longer be cancelled.`, false);
      }
      const refundCents = order.totalCents - order.refundedCents;
      await sendWithNext(
        tx,
        tx.updateTable("Order").set({ status: "cancelled", refundedCents: order.totalCents }).where("id", "=", order.id),
      );
      if (refundCents > 0) {
        await sendWithNext(
          tx,
          tx.insertInto("Refund").values({
            id: randomUUID(),
            tenantId: ctx.tenantId,
            orderId: order.id,
            amountCents: refundCents,
            reason: `cancellation: ${input.reason}`,
            idempotencyKey: ctx.idempotencyKey,
          }),
        );
      }
      return { status: "cancelled", order_number: order.number, refunded_cents: refundCents, refunded: formatCents(refundCents) };
    });
  },
});
