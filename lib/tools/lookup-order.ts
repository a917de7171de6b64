import { z } from "zod";
import { defineTool } from "./types";
import { factsOfOrder, findOrder, type OrderRow, orderFacts, presentOrder, requireOwnedOrder } from "./order-helpers";

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
  // The whole order is what the lookup answers with: the gates read it once, and the call that runs right after them
  // answers from that read (one statement fewer per lookup).
  async factsWithRead(input, ctx) {
    const order = await findOrder(ctx.db, ctx.tenantId, input.order_number);
    return { facts: factsOfOrder(order, input.order_number, `Look up ${input.order_number}`), read: order };
  },
  async execute(input, ctx) {
    const known = ctx.gatesRead === undefined ? undefined : (ctx.gatesRead as OrderRow | null);
    const order = await requireOwnedOrder(ctx.db, ctx.tenantId, input.order_number, ctx.verifiedCustomerId, { known });
    return presentOrder(order);
  },
});
