import "server-only";
import type { PrismaTx } from "@/lib/db/prisma-types";

// The order a handoff is about, as a reviewer needs it beside the decision: status, what was bought, amounts,
// delivery and tracking, what was already refunded or replaced on it — and for the same customer across their
// orders, with dates. Everything is read within the caller's shop.

const HISTORY_LIMIT = 50;

export interface OrderRef {
  /** the order the record names (payload.orderNumber or the pending call's order_number) */
  orderNumber: string | null;
  /** the customer the record names, when the order does not say (an escalation without an order) */
  customerId: string | null;
  /** who the conversation is verified as: is that the order's owner? */
  verifiedCustomerId: string | null;
}

export async function orderFacts(db: PrismaTx, tenantId: string, ref: OrderRef) {
  const number = ref.orderNumber?.trim().toUpperCase() || null;
  const order = number
    ? await db.order.findFirst({
        where: { tenantId, number },
        include: {
          items: { orderBy: { id: "asc" } },
          shipments: { orderBy: { updatedAt: "asc" } },
          refunds: { where: { tenantId }, orderBy: { createdAt: "asc" } },
        },
      })
    : null;
  const customerId = order?.customerId ?? ref.customerId;
  const [customer, refunds, replacements, orderCount] = customerId
    ? await Promise.all([
        db.customer.findFirst({ where: { id: customerId, tenantId }, select: { id: true, name: true, email: true, createdAt: true } }),
        db.refund.findMany({
          where: { tenantId, order: { tenantId, customerId } },
          orderBy: { createdAt: "desc" },
          take: HISTORY_LIMIT,
          select: { id: true, amountCents: true, reason: true, createdAt: true, order: { select: { number: true } } },
        }),
        db.shipment.findMany({
          where: { kind: "replacement", order: { tenantId, customerId } },
          orderBy: { updatedAt: "desc" },
          take: HISTORY_LIMIT,
          select: { id: true, carrier: true, tracking: true, status: true, updatedAt: true, order: { select: { number: true } } },
        }),
        db.order.count({ where: { tenantId, customerId } }),
      ])
    : [null, [], [], 0];

  // The customer's refunds and replacements, newest first, each with its order and date.
  const history = [
    ...refunds.map((r) => ({
      kind: "refund" as const,
      id: r.id,
      orderNumber: r.order.number,
      amountCents: r.amountCents as number | null,
      detail: r.reason,
      at: r.createdAt,
    })),
    ...replacements.map((s) => ({
      kind: "replacement" as const,
      id: s.id,
      orderNumber: s.order.number,
      amountCents: null,
      detail: `${s.carrier} ${s.tracking} — ${s.status.replace(/_/g, " ")}`,
      at: s.updatedAt,
    })),
  ].sort((a, b) => b.at.getTime() - a.at.getTime() || a.id.localeCompare(b.id));

  return {
    /** the number the record names, even when this shop has no such order */
    orderNumber: number,
    order: order
      ? {
          number: order.number,
          status: order.status,
          placedAt: order.placedAt,
          totalCents: order.totalCents,
          refundedCents: order.refundedCents,
          refundableCents: order.totalCents - order.refundedCents,
          note: order.note,
          shippingAddress: order.shippingAddress,
          items: order.items.map((i) => ({
            sku: i.sku,
            name: i.name,
            quantity: i.quantity,
            unitPriceCents: i.unitPriceCents,
            lineCents: i.quantity * i.unitPriceCents,
          })),
          shipments: order.shipments.map((s) => ({
            kind: s.kind,
            carrier: s.carrier,
            tracking: s.tracking,
            status: s.status,
            at: s.updatedAt,
          })),
          refunds: order.refunds.map((r) => ({ amountCents: r.amountCents, reason: r.reason, at: r.createdAt })),
        }
      : null,
    customer: customer ? { ...customer, orderCount } : null,
    /** null when there is no order or no verification to compare */
    verifiedAsOwner: order && ref.verifiedCustomerId ? order.customerId === ref.verifiedCustomerId : null,
    history,
    historyTotals: {
      refundedCents: refunds.reduce((sum, r) => sum + r.amountCents, 0),
      refunds: refunds.length,
      replacements: replacements.length,
    },
  };
}
export type OrderFacts = Awaited<ReturnType<typeof orderFacts>>;
