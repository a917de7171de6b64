import { z } from "zod";
import { defineTool, ToolError } from "./types";
import { effectOfCall, orderFacts, requireOwnedOrder } from "./order-helpers";
import type { Transaction } from "kysely";
import type { DB } from "@/lib/db/kysely";
import { maskAddress } from "@/lib/identity/mask-address";
import { ADDRESS_CHANGE_LEVEL, verificationLevelOf, verificationShortfall } from "@/lib/identity/levels";

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
  description:
    "Change the delivery address of an order that has not shipped yet. Needs a stronger verification than email and order number: verify_customer with the postcode of the order's current delivery address, or a one-time code (a customer the shop signed in is enough).",
  inputSchema: updateShippingAddressInputSchema,
  sideEffect: true,
  accountAction: true,
  async facts(input, ctx) {
    const facts = await orderFacts(ctx.db, ctx.tenantId, input.order_number, `Change the address of ${input.order_number.toUpperCase()}`);
    return { ...facts, requiredVerificationLevel: ADDRESS_CHANGE_LEVEL };
  },
  async execute(input, ctx) {
    return effectOfCall(ctx, "update_shipping_address", input, async (tx) => {
      await requireAddressChangeLevel(tx, ctx);
      const order = await requireOwnedOrder(tx, ctx.tenantId, input.order_number, ctx.verifiedCustomerId, { lock: true });
      if (order.status !== "processing") {
        throw new ToolError("business_rule", `${order.number} is ${order.status}; its address can no longer be changed.`, false);
      }
      await tx
        .updateTable("Order")
        .set({ shippingAddress: JSON.stringify(input.address) })
        .where("id", "=", order.id)
        .execute();
      // The customer typed it, but what the model reads (and may repeat) is masked like every address.
      return { status: "address_updated", order_number: order.number, address: maskAddress(input.address) };
    });
  },
});

/**
 * Email and an order number may both be on a packing slip; redirecting a parcel needs more (the postcode of the
 * order's current delivery address, a one-time code, or the shop's signed identity). Read in the effect's
 * transaction from the conversation itself, whatever the gates decided earlier.
 */
async function requireAddressChangeLevel(
  tx: Transaction<DB>,
  ctx: { tenantId: string; conversationId: string; verifiedCustomerId: string | null },
) {
  const conversation = await tx
    .selectFrom("Conversation")
    .select(["verifiedCustomerId", "verificationLevel"])
    .where("id", "=", ctx.conversationId)
    .where("tenantId", "=", ctx.tenantId)
    .executeTakeFirst();
  // Not verified at all (or as someone else): requireOwnedOrder says what to do.
  if (!conversation?.verifiedCustomerId || conversation.verifiedCustomerId !== ctx.verifiedCustomerId) return;
  const shortfall = verificationShortfall(verificationLevelOf(conversation.verificationLevel), ADDRESS_CHANGE_LEVEL);
  if (shortfall) {
    const { message, ...extra } = shortfall;
    throw new ToolError("permission", `Nothing was changed. ${message}`, true, extra);
  }
}
