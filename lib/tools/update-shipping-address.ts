import { z } from "zod";
import { defineTool, ToolError } from "./types";
import { effectOfCall, orderFacts, requireOwnedOrder } from "./order-helpers";

export const addressSchema = z.object({
  line1: z.string().min(1).max(200),
  line2: z.string().max(200).optional(),
  city: z.string().min(1).max(100),
  postalCode: z.string().min(1).max(20),
  country: z.string().min(2).max(56),
});

export const updateShippingAddressInputSchema = z.object({
  order_number: z.string().min(1).max(40).describe("The order whose delivery address changes (only before it ships)"),
  address: addressSchema.describe("The new delivery address"),
});

export const updateShippingAddress = defineTool({
  name: "update_shipping_address",
  description: "Change the delivery address of an order that has not shipped yet.",
  inputSchema: updateShippingAddressInputSchema,
  sideEffect: true,
  accountAction: true,
  facts: (input, ctx) => orderFacts(ctx.db, ctx.tenantId, input.order_number, `Change the address of ${input.order_number.toUpperCase()}`),
  async execute(input, ctx) {
    return effectOfCall(ctx, "update_shipping_address", input, async (tx) => {
      const order = await requireOwnedOrder(tx, ctx.tenantId, input.order_number, ctx.verifiedCustomerId);
      if (order.status !== "processing") {
        throw new ToolError("business_rule", `${order.number} is ${order.status}; its address can no longer be changed.`, false);
      }
      await tx.order.update({ where: { id: order.id }, data: { shippingAddress: input.address } });
      return { status: "address_updated", order_number: order.number, address: input.address };
    });
  },
});
