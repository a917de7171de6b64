import { Prisma, type Json, type PrismaTx } from "@/lib/db/prisma-types";
import { sqlOf, type Db } from "@/lib/db/sql";
import { performEffect } from "@/lib/commerce/provider";
import { formatCents } from "@/lib/money";
import { ToolError, type CallFacts, type ToolContext } from "./types";

/** Loads an order by its public number within the tenant; a missing order is a business-rule error the model can act on. */
export async function findOrder(db: PrismaTx, tenantId: string, orderNumber: string) {
  const order = await db.order.findUnique({
    where: { tenantId_number: { tenantId, number: normaliseOrderNumber(orderNumber) } },
    include: { shipments: { orderBy: { updatedAt: "desc" } }, customer: true },
  });
  return order;
}

export async function requireOwnedOrder(db: PrismaTx, tenantId: string, orderNumber: string, verifiedCustomerId: string | null) {
  if (!verifiedCustomerId) {
    throw new ToolError("permission", "The customer is not verified. Call verify_customer first.", true);
  }
  const order = await findOrder(db, tenantId, orderNumber);
  if (!order || order.customerId !== verifiedCustomerId) {
    throw new ToolError("business_rule", `No order ${orderNumber} was found on this customer's account. Ask the customer to check the order number.`, true);
  }
  return order;
}

export function normaliseOrderNumber(raw: string): string {
  return raw.trim().toUpperCase();
}

/** What gates need about an order: one narrow read (gating runs on every proposed call). */
export async function orderFacts(db: Db, tenantId: string, orderNumber: string, summary: string, amountCents?: number): Promise<CallFacts> {
  const [order] = await sqlOf(db).query<{ customerId: string; status: string; totalCents: number; refundedCents: number }>(Prisma.sql`
    SELECT "customerId", status::text AS status, "totalCents", "refundedCents" FROM "Order"
    WHERE "tenantId" = ${tenantId} AND number = ${normaliseOrderNumber(orderNumber)}`);
  return {
    orderNumber: normaliseOrderNumber(orderNumber),
    amountCents,
    customerId: order?.customerId,
    orderStatus: order?.status,
    orderTotalCents: order?.totalCents,
    refundableCents: order ? order.totalCents - order.refundedCents : undefined,
    summary,
  };
}

/** The order as the model reads it: normalised dates and statuses, amounts both in cents and formatted. */
export function presentOrder(order: NonNullable<Awaited<ReturnType<typeof findOrder>>>) {
  const shipment = order.shipments[0];
  return {
    order_number: order.number,
    status: order.status,
    placed_on: order.placedAt.toISOString().slice(0, 10),
    total_cents: order.totalCents,
    total: formatCents(order.totalCents),
    refunded_cents: order.refundedCents,
    refundable_cents: order.totalCents - order.refundedCents,
    note: order.note ?? null,
    shipment: shipment ? { carrier: shipment.carrier, tracking: shipment.tracking, status: shipment.status } : null,
    shipping_address: order.shippingAddress,
  };
}

/**
 * Runs a side-effecting tool's effect through the payments/fulfilment boundary under the call's idempotency key
 * and ledger identity; a replayed key returns the recorded outcome, marked `replayed`.
 */
export async function effectOfCall<T extends Record<string, unknown>>(ctx: ToolContext, operation: string, request: Json, effect: (tx: PrismaTx) => Promise<T>) {
  const { outcome, replayed } = await performEffect(
    ctx.db,
    { tenantId: ctx.tenantId, idempotencyKey: ctx.idempotencyKey, operation, request, ledger: { runId: ctx.runId, toolCallId: ctx.toolCallId } },
    effect,
  );
  return { ...outcome, ...(replayed ? { replayed: true } : {}) };
}
