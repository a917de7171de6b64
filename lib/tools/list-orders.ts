import { z } from "zod";
import { defineTool, ToolError } from "./types";
import { formatCents } from "@/lib/money";

export const listOrdersInputSchema = z.object({});

export const listOrders = defineTool({
  name: "list_orders",
  description: "List the verified customer's orders (number, status, total).",
  inputSchema: listOrdersInputSchema,
  sideEffect: false,
  accountAction: true,
  readOnly: true,
  async facts() {
    return { summary: "List orders" };
  },
  async execute(_input, ctx) {
    if (!ctx.verifiedCustomerId) throw new ToolError("permission", "The customer is not verified. Call verify_customer first.", true);
    const orders = await ctx.db
      .selectFrom("Order")
      .select(["number", "status", "totalCents", "note"])
      .where("tenantId", "=", ctx.tenantId)
      .where("customerId", "=", ctx.verifiedCustomerId)
      .orderBy("number")
      .execute();
    return {
      orders: orders.map((o) => ({
        order_number: o.number,
        status: o.status,
        total_cents: o.totalCents,
        total: formatCents(o.totalCents),
        note: o.note ?? null,
      })),
    };
  },
});
