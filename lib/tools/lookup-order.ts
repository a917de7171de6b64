import { z } from "zod";
import { defineTool } from "./types";
import { orderFacts, presentOrder, requireOwnedOrder } from "./order-helpers";

export const lookupOrderInputSchema = z.object({
  order_number: z.string().min(1).max(40).describe("The order number, e.g. A-1001"),
});

export const lookupOrder = defineTool({
  name: "lookup_order",
  description: "Look up one of the verified customer's orders: status, total, refunds so far, shipment and tracking.",
  inputSchema: lookupOrderInputSchema,
  sideEffect: false,
  accountAction: true,
  readOnly: true,
  facts: (input, ctx) => orderFacts(ctx.db, ctx.tenantId, input.order_number, `Look up ${input.order_number}`),
  async execute(input, ctx) {
    const order = await requireOwnedOrder(ctx.db, ctx.tenantId, input.order_number, ctx.verifiedCustomerId);
    return presentOrder(order);
  },
});
