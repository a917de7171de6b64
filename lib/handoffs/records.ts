// Building handoff records (DESIGN §2.3): self-contained, so a reviewer decides without opening the transcript.
// Pure functions over what `readHandoffContext` reads; the runtime writes them (lib/runtime/park, lib/runtime/end).
import { sql } from "kysely";
import type { Store } from "@/lib/db/kysely";
import { formatCents } from "@/lib/money";
import type { CallFacts, EscalationRequest } from "@/lib/tools/types";
import type { HandoffPayload } from "./record";

export interface HandoffContext {
  customer: { id: string; name: string; email: string } | null;
  /** what the customer asked in this run (their words, oldest first) */
  asked: string;
  /** what the agent tried in this run, in plain words */
  tried: string[];
  /** the order the case is about, if one is named */
  order: HandoffPayload["order"];
}

/** Reads what a handoff record needs about a run: the customer, their words, the calls so far, the order. */
export async function readHandoffContext(
  db: Store,
  run: { id: string | null; conversationId: string; tenantId: string },
  orderNumber?: string | null,
): Promise<HandoffContext> {
  const [customer, asked, calls, order] = await Promise.all([
    db
      .selectFrom("Conversation as v")
      .innerJoin("Customer as c", (j) => j.on(sql<boolean>`c.id = coalesce(v."verifiedCustomerId", v."customerId")`))
      .select(["c.id", "c.name", "c.email"])
      .where("v.id", "=", run.conversationId)
      .executeTakeFirst(),
    db
      .selectFrom("Message")
      .select("displayText")
      .where("conversationId", "=", run.conversationId)
      .where("author", "=", "CUSTOMER")
      .where((eb) => (run.id ? eb.or([eb("runId", "=", run.id), eb("pendingDelivery", "=", true)]) : eb.val(true)))
      .orderBy("seq", "desc")
      .limit(3)
      .execute(),
    run.id
      ? db
          .selectFrom("ToolCall")
          .select(["name", "input", "status", "isError", "result"])
          .where("runId", "=", run.id)
          .orderBy("messageSeq")
          .orderBy("position")
          .execute()
      : Promise.resolve([]),
    orderNumber ? orderCase(db, run.tenantId, orderNumber) : Promise.resolve(null),
  ]);
  let askedText = asked
    .map((m) => m.displayText)
    .filter(Boolean)
    .reverse()
    .join(" / ");
  if (!askedText) {
    const last = await db
      .selectFrom("Message")
      .select("displayText")
      .where("conversationId", "=", run.conversationId)
      .where("author", "=", "CUSTOMER")
      .orderBy("seq", "desc")
      .limit(1)
      .executeTakeFirst();
    askedText = last?.displayText ?? "(no customer message)";
  }
  return { customer: customer ?? null, asked: askedText, tried: calls.map(describeCall), order };
}

async function orderCase(db: Store, tenantId: string, orderNumber: string): Promise<HandoffPayload["order"]> {
  const order = await db
    .selectFrom("Order")
    .select(["id", "number", "status", "totalCents", "refundedCents"])
    .where("tenantId", "=", tenantId)
    .where("number", "=", orderNumber.trim().toUpperCase())
    .executeTakeFirst();
  if (!order) return null;
  const shipment = await db
    .selectFrom("Shipment")
    .select(["carrier", "tracking", "status"])
    .where("orderId", "=", order.id)
    .orderBy("updatedAt", "desc")
    .limit(1)
    .executeTakeFirst();
  return {
    number: order.number,
    status: order.status,
    totalCents: order.totalCents,
    refundedCents: order.refundedCents,
    shipment: shipment ?? null,
  };
}

const STATUS_WORDS: Record<string, string> = {
  SUCCEEDED: "done",
  FAILED: "failed",
  DENIED: "refused",
  EXPIRED: "expired without a decision",
  PARKED: "waiting for approval",
  APPROVED: "approved, not run yet",
  EXECUTING: "running",
  RETRY_WAIT: "waiting to retry",
  DEFERRED: "deferred",
  GATED: "checked",
};

/** One tool call in plain words: "Refund $250.00 on A-1002 — waiting for approval". */
export function describeCall(c: { name: string; input: unknown; status: string; isError?: boolean; result?: unknown }): string {
  const input = (c.input ?? {}) as Record<string, unknown>;
  const order = typeof input.order_number === "string" ? input.order_number.toUpperCase() : null;
  const amount = typeof input.amount_cents === "number" ? formatCents(input.amount_cents) : null;
  const what = (() => {
    switch (c.name) {
      case "verify_customer":
        return "Checked the customer's identity";
      case "send_verification_code":
        return "Sent a one-time code to the customer's email";
      case "lookup_order":
        return `Looked up order ${order ?? ""}`.trim();
      case "list_orders":
        return "Listed the customer's orders";
      case "refund_order":
        return `Refund ${amount ?? ""} on ${order ?? "an order"}`.replace("  ", " ");
      case "create_replacement":
        return `Replacement for ${order ?? "an order"}`;
      case "cancel_order":
        return `Cancel ${order ?? "an order"}`;
      case "update_shipping_address":
        return `Change the delivery address of ${order ?? "an order"}`;
      case "escalate_to_human":
        return "Handed the conversation to a person";
      default:
        return c.name;
    }
  })();
  const message =
    c.isError && c.result && typeof (c.result as { message?: unknown }).message === "string"
      ? `: ${(c.result as { message: string }).message}`
      : "";
  return `${what} — ${STATUS_WORDS[c.status] ?? c.status.toLowerCase()}${message}`.slice(0, 400);
}

/** What a pending call is about, in the customer's terms: "Your $250.00 refund for A-1002". */
export function pendingSubject(
  toolName: string | undefined,
  p: { orderNumber?: string | null; amountCents?: number | null; summary?: string },
): string {
  const order = p.orderNumber ?? "your order";
  switch (toolName) {
    case "refund_order":
      return `Your ${p.amountCents != null ? `${formatCents(p.amountCents)} ` : ""}refund for ${order}`;
    case "cancel_order":
      return `Your request to cancel ${order}`;
    case "create_replacement":
      return `Your replacement for ${order}`;
    default:
      return p.summary ? `Your request (${p.summary})` : "Your request";
  }
}

/** What the customer is told while a call waits for a person: honest, specific, never "done". */
export function pendingNotice(toolName: string, facts: CallFacts): string {
  const decision = toolName === "cancel_order" ? "confirmation" : "approval";
  return `${pendingSubject(toolName, facts)} is with our team for ${decision}. I'll update you here as soon as they decide.`;
}

/** The record of a parked call: the exact pending call, the rule that asked, and the case. */
export function approvalRecord(
  ctx: HandoffContext,
  a: {
    call: { toolUseId: string; name: string; input: unknown };
    facts: CallFacts;
    rule: { gate: string; reason: string };
    policyVersion: number;
    specialist?: string;
  },
): HandoffPayload {
  return {
    customer: ctx.customer,
    asked: ctx.asked,
    tried: ctx.tried,
    rootCause: a.rule.reason,
    amountCents: a.facts.amountCents ?? null,
    recommendedAction: `Approve: ${a.facts.summary}.`,
    reason: `${a.facts.summary} needs approval: ${a.rule.reason}`,
    trigger: "approval_required",
    orderNumber: a.facts.orderNumber ?? null,
    toolName: a.call.name,
    toolUseId: a.call.toolUseId,
    proposedInput: a.call.input as Record<string, unknown>,
    rule: { gate: a.rule.gate, reason: a.rule.reason, policyVersion: a.policyVersion },
    order: ctx.order ?? null,
    ...(a.specialist ? { specialist: a.specialist } : {}),
  };
}

/** The record of an escalation. */
export function escalationRecord(
  ctx: HandoffContext,
  e: EscalationRequest & { refusedCall?: HandoffPayload["refusedCall"]; specialist?: string },
): HandoffPayload {
  return {
    customer: ctx.customer,
    asked: e.asked ?? ctx.asked,
    tried: [...(e.tried ?? []), ...ctx.tried],
    rootCause: e.rootCause || "Not diagnosed.",
    amountCents: e.amountCents ?? null,
    recommendedAction: e.recommendedAction || "Take over the conversation and help the customer.",
    reason: e.reason,
    trigger: e.trigger,
    orderNumber: e.orderNumber ?? ctx.order?.number ?? null,
    order: ctx.order ?? null,
    ...(e.refusedCall ? { refusedCall: e.refusedCall } : {}),
    ...(e.specialist ? { specialist: e.specialist } : {}),
  };
}
