import { formatCents } from "@/lib/money";
import { maskAddress } from "@/lib/identity/mask-address";

/**
 * The offline model's wording. Every sentence about an action is built from a tool call and its
 * result only, so a reply never claims more than the results show. Short, plain, concrete.
 */

export interface CallView {
  name: string;
  input: Record<string, unknown>;
  result?: { isError: boolean; body: Record<string, unknown> };
}

type Review = {
  decision?: string;
  by?: string;
  reason?: string;
  original_input?: Record<string, unknown>;
  executed_input?: Record<string, unknown>;
};

const str = (v: unknown): string | undefined => (typeof v === "string" && v.trim() ? v.trim() : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const obj = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

const orderOf = (call: CallView) => str(call.result?.body.order_number) ?? str(call.input.order_number)?.toUpperCase() ?? "your order";
const trimEnd = (s: string) => s.trim().replace(/[\s.!]+$/, "");

/** The result's message without the sentences addressed to the agent ("Ask the customer…", "Do not retry."). */
export function customerFacingMessage(message: unknown): string | undefined {
  const text = str(message);
  if (!text) return undefined;
  const kept = text
    .split(/(?<=[.!?])\s+/)
    .filter(
      (s) =>
        !/^(ask|tell|explain|use|call|do not|don't|look the order up|fix them|escalate|a person has been asked|gave up)/i.test(s.trim()),
    );
  return kept.length ? trimEnd(kept.join(" ")) : undefined;
}

/** An address as the customer may see it: masked (lib/identity/mask-address), whether a tool or a person wrote it. */
export function formatAddress(a: unknown): string {
  const o = obj(a);
  const masked = typeof o?.masked === "string" ? o.masked : maskAddress(o)?.masked;
  return masked || "the new address";
}

/** "refund $250.00 on A-1002": what a call asks for, for denials, expiries and failures. */
export function describeAction(name: string, input: Record<string, unknown>): string {
  const order = str(input.order_number)?.toUpperCase() ?? "your order";
  switch (name) {
    case "refund_order":
      return num(input.amount_cents) !== undefined ? `refund ${formatCents(num(input.amount_cents)!)} on ${order}` : `refund ${order}`;
    case "cancel_order":
      return `cancel ${order}`;
    case "create_replacement":
      return `send a replacement for ${order}`;
    case "update_shipping_address":
      return `change the delivery address of ${order}`;
    case "lookup_order":
      return `look up ${order}`;
    case "list_orders":
      return "list your orders";
    case "verify_customer":
      return "verify your account";
    case "escalate_to_human":
      return "reach a person from our team";
    default:
      if (SPECIALIST_CALL.test(name)) return `finish looking into ${order}`;
      return name.replace(/_/g, " ");
  }
}

function humanStatus(s: string): string {
  return s.replace(/_/g, " ");
}

/** One order's status, shipment and tracking, from a lookup_order result. */
export function statusSentence(body: Record<string, unknown>): string {
  const order = str(body.order_number) ?? "Your order";
  const status = str(body.status) ?? "unknown";
  const sh = obj(body.shipment);
  const track = sh
    ? ` (${[str(sh.carrier), str(sh.tracking) ? `tracking ${str(sh.tracking)}` : undefined].filter(Boolean).join(" ")}: ${humanStatus(str(sh.status) ?? "no update yet")})`
    : "";
  const refunded = num(body.refunded_cents);
  const refundNote = refunded && refunded > 0 ? ` Refunds so far: ${formatCents(refunded)}.` : "";
  switch (status) {
    case "delivered":
      return `Order ${order} was delivered${track}.${refundNote}`;
    case "shipped":
      return `Order ${order} has shipped and is on its way${track}.${refundNote}`;
    case "processing":
      return `Order ${order} is still being prepared and hasn't shipped yet${track}.${refundNote}`;
    case "lost":
      return `Order ${order} was lost in transit${track}. I'm sorry about that — I can send a replacement or refund it; just tell me which you'd prefer.${refundNote}`;
    case "cancelled":
      return `Order ${order} was cancelled${track}.${refundNote}`;
    default:
      return `Order ${order} is ${humanStatus(status)}${track}.${refundNote}`;
  }
}

function successSentence(call: CallView): string {
  const body = call.result?.body ?? {};
  const order = orderOf(call);
  switch (call.name) {
    case "refund_order": {
      const amount = str(body.amount) ?? formatCents(num(body.amount_cents) ?? num(call.input.amount_cents) ?? 0);
      const st = str(body.status);
      if (st && /pending|await|queued|review/i.test(st)) {
        return `Your ${amount} refund on ${order} needs a specialist's approval; they're reviewing it now and I'll update you here.`;
      }
      return `I've refunded ${amount} on order ${order} to your original payment method.`;
    }
    case "create_replacement": {
      const tracking = str(body.tracking);
      return `I've arranged a free replacement for order ${order}${tracking ? `; it ships with tracking number ${tracking}` : ""}.`;
    }
    case "cancel_order": {
      const refunded = str(body.refunded) ?? (num(body.refunded_cents) ? formatCents(num(body.refunded_cents)!) : undefined);
      // Worded without "refunded $…": the money goes back as part of the cancellation, not as a separate refund.
      return `I've cancelled order ${order}${refunded ? `, and the ${refunded} you paid goes back to your original payment method` : ""}.`;
    }
    case "update_shipping_address":
      return `I've changed the delivery address of order ${order} to ${formatAddress(body.address ?? call.input.address)}.`;
    case "lookup_order":
      return statusSentence(body);
    case "list_orders": {
      const orders = Array.isArray(body.orders) ? (body.orders as Array<Record<string, unknown>>) : [];
      if (!orders.length) return "I couldn't find any orders on your account.";
      return `Your orders: ${orders.map((o) => `${str(o.order_number)} (${str(o.total) ?? formatCents(num(o.total_cents) ?? 0)}, ${humanStatus(str(o.status) ?? "unknown")})`).join("; ")}.`;
    }
    case "escalate_to_human":
      return escalationSentence(str(call.input.trigger));
    case "verify_customer":
      return str(body.name) ? `Thanks, ${str(body.name)!.split(" ")[0]} — you're verified.` : "Thanks — you're verified.";
    default:
      return `Done: ${describeAction(call.name, call.input)}.`;
  }
}

export function escalationSentence(trigger: string | undefined): string {
  if (trigger === "customer_request")
    return "I've asked a person from our team to take over this conversation; they'll reply here as soon as they can.";
  if (trigger === "policy_gap")
    return "That needs a decision from our team, so I've passed it to a person who will follow up with you here. I can't promise the outcome.";
  return "I'm sorry, I couldn't get this done myself, so I've handed it to a person from our team who will follow up with you here.";
}

/** A result the harness marked as already escalated to a person (e.g. a refund above the ceiling). */
export function isEscalatedBody(body: Record<string, unknown>): boolean {
  return body.escalated === true || body.status === "escalated" || (typeof body.handoff_id === "string" && body.is_retryable === false);
}

function editedSentence(call: CallView, review: Review): string {
  const original = review.original_input ?? {};
  const executed = review.executed_input ?? call.input;
  const done = successSentence(call);
  if (call.name === "refund_order" && num(original.amount_cents) !== undefined && num(executed.amount_cents) !== undefined) {
    return `Our team reviewed your request: instead of the ${formatCents(num(original.amount_cents)!)} you asked for, they approved ${formatCents(num(executed.amount_cents)!)}. ${done}`;
  }
  const changes = Object.keys(executed)
    .filter((k) => JSON.stringify(executed[k]) !== JSON.stringify(original[k]))
    .map((k) =>
      k === "address"
        ? `the address ${formatAddress(executed[k])}`
        : k === "amount_cents"
          ? `${formatCents(num(executed[k]) ?? 0)}`
          : `${k.replace(/_/g, " ")} ${String(executed[k])}`,
    );
  return `Our team approved your request with a change${changes.length ? ` (${changes.join(", ")})` : ""}. ${done}`;
}

/**
 * What the customer is told about one tool call's result: success, a reviewer's decision (approved,
 * edited, denied, expired), an escalation, or a failure — never more than the result says.
 */
export function resultSentence(call: CallView): string {
  const result = call.result;
  if (!result) return `I haven't been able to ${describeAction(call.name, call.input)} yet.`;
  if (SPECIALIST_CALL.test(call.name)) return specialistSentence(call as Required<CallView>);
  const { body, isError } = result;
  const review = obj(body.review) as Review | undefined;
  const action = describeAction(call.name, review?.original_input ?? call.input);
  if (review?.decision === "denied") {
    const reason = str(review.reason) ? `: ${trimEnd(review.reason!)}` : "";
    return `Our team reviewed your request to ${action} and declined it${reason}. Nothing was changed.`;
  }
  if (review?.decision === "expired") {
    return `Your request to ${action} needed a person's approval, but it expired before anyone decided, so nothing was done. This isn't a refusal — a person from our team will follow up with you.`;
  }
  if (isError) {
    if (isEscalatedBody(body)) {
      return `I can't ${action} myself, so I've passed it to our team; a person will follow up with you here.`;
    }
    const message = customerFacingMessage(body.message);
    const category = str(body.error_category);
    if (review && (review.decision === "approved" || review.decision === "edited")) {
      return `Our team approved your request to ${action}, but it couldn't be completed${message ? `: ${message}` : ""}. Nothing was done yet; a person will follow up.`;
    }
    if (category === "business_rule") return `I couldn't ${action}${message ? `: ${message}` : ""}.`;
    if (category === "permission") return `I'm not able to ${action} from here.`;
    return `I'm sorry, I couldn't ${action} because our system isn't responding right now. Nothing was changed.`;
  }
  if (review?.decision === "approved") {
    return `Good news: our team approved it — ${successSentence(call)}`;
  }
  if (review?.decision === "edited") return editedSentence(call, review);
  return successSentence(call);
}

const SPECIALIST_CALL = /^ask_\w+_specialist$/;
const ACTIONS = new Set(["refund_order", "create_replacement", "cancel_order", "update_shipping_address"]);

/** The "For the customer:" line of a specialist's report (the offline specialist builds it from its tool results). */
export function forTheCustomer(report: unknown): string | undefined {
  return str(str(report)?.match(/^For the customer:\s*(.+)$/m)?.[1]);
}

/**
 * What the customer is told about a specialist's work: each action it took, from the outcome the runtime recorded
 * (never the specialist's own words), like the agent's own calls; what no action tells (a status, nothing left to
 * refund, an action still without an outcome) from its report's "For the customer:" line.
 */
function specialistSentence(call: Required<CallView>): string {
  const { body, isError } = call.result;
  const actions = (Array.isArray(body.actions) ? body.actions : []).flatMap((a) => (obj(a) ? [obj(a)!] : []));
  const told: string[] = [];
  let untold = !actions.length;
  for (const a of actions) {
    const tool = str(a.tool);
    const status = str(a.status);
    const review = obj(a.review);
    if (tool && ACTIONS.has(tool) && (status === "succeeded" || review)) {
      const input = obj(a.input) ?? {};
      told.push(resultSentence({ name: tool, input, result: { isError: status !== "succeeded", body: review ? { review } : {} } }));
    } else untold = true;
  }
  if (isError) {
    const followUp = /person will follow up/i.test(str(body.message) ?? "");
    told.push(
      followUp
        ? "I'm sorry — I couldn't finish this myself, so a person from our team will follow up with you here."
        : `I'm sorry, I couldn't ${describeAction(call.name, call.input)} right now.`,
    );
    return told.join(" ");
  }
  const line = untold ? forTheCustomer(body.report) : undefined;
  if (line) told.push(line);
  return told.length ? told.join(" ") : `I've looked into ${orderOf(call)}; nothing on the account was changed.`;
}

/** Questions about identity are in ./identity. */
export type Question = "which_order" | "address";

/** The questions the model asks when it cannot act yet. */
export function questionSentence(q: Question, order?: string): string {
  switch (q) {
    case "which_order":
      return "Which order is this about? Please give me the order number (it looks like A-1234).";
    case "address":
      return `What's the new delivery address${order ? ` for ${order}` : ""}? Please include the street, city, postal code and country.`;
  }
}

export const GREETING =
  "Hi! I'm the shop's support assistant. I can check an order, arrange a refund or replacement, cancel an order or change a delivery address. How can I help?";
export const UNCLEAR =
  "Sorry, I'm not sure I understood. I can check an order's status, arrange a refund or replacement, cancel an order, change a delivery address, or get you a person. What can I do for you?";
export const THANKS = "You're welcome! Is there anything else I can help with?";
