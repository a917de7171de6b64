import { sql, type Transaction } from "kysely";
import type { DB, Store } from "@/lib/db/kysely";
import { normaliseOrderNumber } from "@/lib/commerce/order-number";
import { performEffect } from "@/lib/commerce/provider";
import { maskAddress } from "@/lib/identity/mask-address";
import { formatCents } from "@/lib/money";
import { type CallFacts, type ToolContext, type ToolDb, ToolError } from "./types";

export interface OrderRow {
  id: string;
  tenantId: string;
  customerId: string;
  number: string;
  totalCents: number;
  refundedCents: number;
  status: string;
  note: string | null;
  shippingAddress: unknown;
  placedAt: Date;
  shipments: Array<{ carrier: string; tracking: string; status: string; kind: string; updatedAt: Date }>;
}

/** An order row as its select answers (shipments as JSON, their timestamps as UTC ISO strings). */
type OrderRead = Omit<OrderRow, "shipments" | "placedAt"> & {
  placedAt: Date | string;
  shipments: Array<Omit<OrderRow["shipments"][number], "updatedAt"> & { updatedAt: string }>;
};

/** The select of one order by its public number within the tenant, with its shipments (newest first) as JSON. */
function orderSelect(tenantId: string, orderNumber: string, lock: boolean) {
  return sql<OrderRead>`
    SELECT o.id, o."tenantId", o."customerId", o.number, o."totalCents", o."refundedCents", o.status, o.note, o."shippingAddress", o."placedAt",
      coalesce((SELECT jsonb_agg(jsonb_build_object('carrier', s.carrier, 'tracking', s.tracking, 'status', s.status, 'kind', s.kind,
          'updatedAt', to_char(s."updatedAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY s."updatedAt" DESC)
        FROM "Shipment" s WHERE s."orderId" = o.id), '[]'::jsonb) AS shipments
    FROM "Order" o WHERE o."tenantId" = ${tenantId} AND o.number = ${normaliseOrderNumber(orderNumber)} ${lock ? sql`FOR UPDATE OF o` : sql``}`;
}

function orderRow(read: OrderRead | null | undefined): OrderRow | null {
  if (!read) return null;
  return {
    ...read,
    placedAt: new Date(read.placedAt),
    shipments: read.shipments.map((s) => ({ ...s, updatedAt: new Date(s.updatedAt) })),
  };
}

/**
 * Loads an order by its public number within the tenant, with its shipments (newest first); `lock` takes the order's
 * row lock (a side effect reads what it may still do under it). null when there is no such order.
 */
export async function findOrder(
  db: ToolDb,
  tenantId: string,
  orderNumber: string,
  opts: { lock?: boolean } = {},
): Promise<OrderRow | null> {
  // One round trip: the shipments come with the order as JSON.
  const { rows } = await orderSelect(tenantId, orderNumber, !!opts.lock).execute(db);
  return orderRow(rows[0]);
}

/**
 * `findOrder` with its row lock as a side effect's `effectRead`: one JSON value (null: no such order), read by the
 * effect transaction's first statement. `lockedOrderOf` turns its answer into the row.
 */
export function lockedOrderRead(tenantId: string, orderNumber: string) {
  // placedAt as UTC ISO text, like the shipments' timestamps (to_jsonb would write it without its zone).
  return sql`(SELECT to_jsonb(o) || jsonb_build_object('placedAt', to_char(o."placedAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
    FROM (${orderSelect(tenantId, orderNumber, true)}) o)`;
}

/** The order a side effect's `effectRead` (`lockedOrderRead`) answered; undefined when it was not read. */
export function lockedOrderOf(effectRead: unknown): OrderRow | null | undefined {
  return effectRead === undefined ? undefined : orderRow(effectRead as OrderRead | null);
}

/** `effectRead` of a side effect on one of the customer's orders: the order, under its row lock (`lockedOrderRead`). */
export function orderEffectRead<I extends { order_number: string }>(input: I, ctx: { tenantId: string }) {
  return lockedOrderRead(ctx.tenantId, input.order_number);
}

/**
 * Inside such an effect: the verified customer's order under its row lock — as `orderEffectRead` read it with the
 * transaction's first statement, or read here when it was not.
 */
export function requireLockedOrder(tx: ToolDb, ctx: ToolContext, orderNumber: string): Promise<OrderRow> {
  return requireOwnedOrder(tx, ctx.tenantId, orderNumber, ctx.verifiedCustomerId, { lock: true, known: lockedOrderOf(ctx.effectRead) });
}

export async function requireOwnedOrder(
  db: ToolDb,
  tenantId: string,
  orderNumber: string,
  verifiedCustomerId: string | null,
  opts: {
    lock?: boolean;
    /** the order as already read (`findOrder`), null if it was not found: no read of its own */
    known?: OrderRow | null;
  } = {},
) {
  if (!verifiedCustomerId) {
    throw new ToolError("permission", "The customer is not verified. Call verify_customer first.", true);
  }
  const order = opts.known !== undefined ? opts.known : await findOrder(db, tenantId, orderNumber, opts);
  if (!order || order.customerId !== verifiedCustomerId) {
    throw new ToolError(
      "business_rule",
      `No order ${orderNumber} was found on this customer's account. Ask the customer to check the order number.`,
      true,
    );
  }
  return order;
}

/** What gates need about an order: one narrow read (gating runs on every proposed call). */
export async function orderFacts(
  db: Store,
  tenantId: string,
  orderNumber: string,
  summary: string,
  amountCents?: number,
): Promise<CallFacts> {
  const order = await db
    .selectFrom("Order")
    .select(["customerId", "status", "totalCents", "refundedCents"])
    .where("tenantId", "=", tenantId)
    .where("number", "=", normaliseOrderNumber(orderNumber))
    .executeTakeFirst();
  return factsOfOrder(order, orderNumber, summary, amountCents);
}

/** The gates' facts of an order as read (null or undefined: there is no such order). */
export function factsOfOrder(
  order: Pick<OrderRow, "customerId" | "status" | "totalCents" | "refundedCents"> | null | undefined,
  orderNumber: string,
  summary: string,
  amountCents?: number,
): CallFacts {
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

/**
 * A refund's facts as its effect's first read shows the order (`lockedOrderRead`, under its row lock): what is
 * refunded so far counts, nothing waiting (lib/runtime/judged-again judges an approved refund again on them). null
 * when the order was not read.
 */
export function lockedRefundFacts(
  effectRead: unknown,
  a: { orderNumber: string; amountCents: number; summary: string; windowDays: number },
): CallFacts | null {
  const order = lockedOrderOf(effectRead);
  if (!order) return null;
  return {
    ...factsOfOrder(order, a.orderNumber, a.summary, a.amountCents),
    totals: {
      orderDoneCents: order.refundedCents,
      orderPendingCents: 0,
      sameTurnCents: 0,
      customerAutoCents: 0,
      customerPendingAutoCents: 0,
      windowDays: a.windowDays,
    },
  };
}

/** Statuses of a call that will still act unless someone stops it: parked, deferred, approved, running, waiting to retry. */
const OPEN_CALL = sql`('PARKED', 'DEFERRED', 'APPROVED', 'EXECUTING', 'RETRY_WAIT')`;

/**
 * The facts of a money-moving call (a refund or a replacement), with the totals its limits apply to (see
 * lib/policy): what was already done on the order, what is waiting on it (parked or approved, not run — in any
 * conversation), and what was done automatically for the order's customer within the policy's window. One query.
 * `counting: "done"` leaves out what waits (an automatic call judged again where it acts: lib/runtime/judged-again).
 * `amount` says what a call of this tool is worth: a refund its amount, a replacement the order's value.
 */
export async function moneyFacts(
  db: Store,
  a: {
    tenantId: string;
    tool: "refund_order" | "create_replacement";
    orderNumber: string;
    amountCents?: number;
    windowDays: number;
    summary: string;
    /** the call being judged: its own waiting row is not counted */
    callId?: string;
    /** "done": what waits for a decision or to run is not counted (FactsContext `counting`) */
    counting?: "all" | "done";
  },
): Promise<CallFacts> {
  const number = normaliseOrderNumber(a.orderNumber);
  const done = a.counting === "done";
  const worth =
    a.tool === "refund_order"
      ? sql`(coalesce(c."effectiveInput", c.input)->>'amount_cents')::int`
      : sql`(c."gateFacts"->>'amountCents')::int`;
  const sum = (where: ReturnType<typeof sql>) =>
    sql`(SELECT coalesce(sum(${worth}), 0)::int FROM "ToolCall" c
         WHERE c."tenantId" = ${a.tenantId} AND c.name = ${a.tool} AND c.id <> ${a.callId ?? ""} AND ${where})`;
  const { rows } = await sql<{
    customerId: string;
    status: string;
    totalCents: number;
    refundedCents: number;
    replacements: number;
    pending: number;
    customerAuto: number;
    customerPendingAuto: number;
  }>`
    SELECT o."customerId", o.status::text AS status, o."totalCents", o."refundedCents",
      (SELECT count(*)::int FROM "Shipment" s WHERE s."orderId" = o.id AND s.kind = 'replacement') AS replacements,
      ${done ? sql`0` : sum(sql`c.status IN ${OPEN_CALL} AND c."gateFacts"->>'orderNumber' = ${number}`)} AS pending,
      ${sum(sql`c.status = 'SUCCEEDED' AND c."decidedById" IS NULL AND c."gateFacts"->>'customerId' = o."customerId"
                AND c."createdAt" > now() - make_interval(days => ${a.windowDays}::int)`)} AS "customerAuto",
      ${done ? sql`0` : sum(sql`c.status IN ('APPROVED', 'EXECUTING', 'RETRY_WAIT') AND c."decidedById" IS NULL AND c."gateFacts"->>'customerId' = o."customerId"`)} AS "customerPendingAuto"
    FROM "Order" o WHERE o."tenantId" = ${a.tenantId} AND o.number = ${number}`.execute(db);
  const order = rows[0];
  const amountCents = a.tool === "refund_order" ? a.amountCents : order?.totalCents;
  return {
    orderNumber: number,
    amountCents,
    customerId: order?.customerId,
    orderStatus: order?.status,
    orderTotalCents: order?.totalCents,
    refundableCents: order ? order.totalCents - order.refundedCents : undefined,
    totals: order
      ? {
          orderDoneCents: a.tool === "refund_order" ? order.refundedCents : order.replacements * order.totalCents,
          orderOtherRemedyCents: a.tool === "refund_order" ? order.replacements * order.totalCents : order.refundedCents,
          orderPendingCents: order.pending,
          sameTurnCents: 0,
          customerAutoCents: order.customerAuto,
          customerPendingAutoCents: order.customerPendingAuto,
          windowDays: a.windowDays,
        }
      : undefined,
    summary: a.summary,
  };
}

/** The order as the model reads it: normalised dates and statuses, amounts both in cents and formatted. */
export function presentOrder(order: Omit<OrderRow, "id" | "tenantId" | "customerId">) {
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
    shipping_address: maskAddress(order.shippingAddress),
  };
}

/** The effect's transaction: a side-effecting tool only ever runs inside the runtime's fenced transaction. */
export function effectTransaction(ctx: ToolContext): Transaction<DB> {
  if (!ctx.db.isTransaction) throw new Error("a side effect must run in the runtime's transaction");
  return ctx.db as Transaction<DB>;
}

/**
 * Runs a side-effecting tool's effect through the payments/fulfilment boundary under the call's idempotency key
 * and ledger identity; a replayed key returns the recorded outcome, marked `replayed`.
 */
export async function effectOfCall<T extends Record<string, unknown>>(
  ctx: ToolContext,
  operation: string,
  request: unknown,
  effect: (tx: Transaction<DB>) => Promise<T>,
) {
  const { outcome, replayed } = await performEffect(
    effectTransaction(ctx),
    {
      tenantId: ctx.tenantId,
      idempotencyKey: ctx.idempotencyKey,
      operation,
      request,
      ledger: { runId: ctx.runId, toolCallId: ctx.toolCallId },
    },
    effect,
    ctx.recordedOutcome,
  );
  return { ...outcome, ...(replayed ? { replayed: true } : {}) };
}
