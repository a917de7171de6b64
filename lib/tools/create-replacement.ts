import { randomUUID } from "node:crypto";
import { z } from "zod";
import { defineTool, ToolError } from "./types";
import { effectOfCall, moneyFacts, orderEffectRead, requireLockedOrder } from "./order-helpers";
import { formatCents } from "@/lib/money";
import { sendWithNext } from "@/lib/db/kysely";

export const createReplacementInputSchema = z.object({
  order_number: z.string().min(1).max(40).describe("The delivered order to replace"),
  reason: z.string().min(1).max(500).describe("What was wrong (damaged, wrong item, …)"),
});

export const createReplacement = defineTool({
  name: "create_replacement",
  description:
    "Ship a free replacement of a delivered or lost order. Replacements above the shop's automatic limit wait for a person's approval.",
  inputSchema: createReplacementInputSchema,
  sideEffect: true,
  accountAction: true,
  limitedOnTotals: true,
  async facts(input, ctx) {
    const facts = await moneyFacts(ctx.db, {
      tenantId: ctx.tenantId,
      tool: "create_replacement",
      orderNumber: input.order_number,
      callId: ctx.callId,
      counting: ctx.counting,
      windowDays: ctx.policy.rules.replacement.autoPerCustomerWindowDays,
      summary: `Replace ${input.order_number.toUpperCase()}`,
    });
    return { ...facts, summary: `Replace ${facts.orderNumber}${facts.orderTotalCents ? ` (${formatCents(facts.orderTotalCents)})` : ""}` };
  },
  // The order, under its row lock, comes with the effect transaction's first statement; the shipment goes with the
  // statement that records the outcome (lib/db/kysely `sendWithNext`): no round trip of their own.
  effectRead: orderEffectRead,
  async execute(input, ctx) {
    return effectOfCall(ctx, "create_replacement", input, async (tx) => {
      const order = await requireLockedOrder(tx, ctx, input.order_number);
      if (order.status !== "delivered" && order.status !== "lost") {
        throw new ToolError("business_rule", `${order.number} is ${order.status}; only delivered or lost orders can be replaced.`, false);
      }
      const tracking = `1ZR${ctx.idempotencyKey.slice(0, 12).toUpperCase()}`;
      await sendWithNext(
        tx,
        tx.insertInto("Shipment").values({
          id: randomUUID(),
          orderId: order.id,
          carrier: "UPS",
          tracking,
          status: "label_created",
          kind: "replacement",
          updatedAt: new Date(),
        }),
      );
      return { status: "replacement_created", order_number: order.number, value: formatCents(order.totalCents), tracking };
    });
  },
});
