import { formatCents } from "@/lib/money";

// "What the agent tried", in plain words, from the run's tool calls as recorded (name, input, status, result,
// the gate's reason and a reviewer's review) — for reviewers, who should not have to read function-call JSON.

/** One tool call as recorded (ToolCall row fields). */
export interface TriedCall {
  name: string;
  input: unknown;
  effectiveInput?: unknown;
  status: string;
  isError: boolean;
  gateDecision: string;
  gateReason: string;
  result: unknown;
  review: unknown;
}

export type TriedTone = "done" | "waiting" | "refused" | "failed" | "info";

export interface TriedStep {
  text: string;
  tone: TriedTone;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {};
}
function str(v: unknown): string | undefined {
  return typeof v === "string" && v.trim() ? v.trim() : undefined;
}
function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

function orderOf(input: Obj): string {
  return str(input.order_number)?.toUpperCase() ?? "an order";
}

/** "12 New Street, Springfield 12345, US" */
export function addressInWords(v: unknown): string {
  const a = obj(v);
  const city = [str(a.city), str(a.postalCode)].filter(Boolean).join(" ");
  return [str(a.line1), str(a.line2), city, str(a.country)].filter(Boolean).join(", ") || "a new address";
}

const TRIGGER_WORDS: Record<string, string> = {
  customer_request: "the customer asked for a person",
  policy_gap: "it needs a policy exception",
  no_progress: "the agent could not make progress",
};

/** What the call asks for, as the object of "Asked to …" ("refund $250.00 on A-1002"). */
function request(name: string, input: Obj): string {
  switch (name) {
    case "refund_order": {
      const cents = num(input.amount_cents);
      return `refund ${cents !== undefined ? formatCents(cents) : "an amount"} on ${orderOf(input)}`;
    }
    case "cancel_order":
      return `cancel ${orderOf(input)}`;
    case "create_replacement":
      return `send a replacement for ${orderOf(input)}`;
    case "update_shipping_address":
      return `change the delivery address of ${orderOf(input)} to ${addressInWords(input.address)}`;
    case "lookup_order":
      return `look up order ${orderOf(input)}`;
    case "list_orders":
      return "list the customer's orders";
    case "verify_customer": {
      const who = [str(input.email) ?? str(input.name), str(input.order_number) ? `order ${orderOf(input)}` : undefined]
        .filter(Boolean)
        .join(", ");
      return `verify the customer${who ? ` (${who})` : ""}`;
    }
    case "escalate_to_human":
      return "hand the conversation to a person";
    default:
      return `use ${name}`;
  }
}

/** A successful call, in the past tense, with what its result says. */
function done(name: string, input: Obj, result: Obj): string {
  switch (name) {
    case "refund_order": {
      const cents = num(result.amount_cents) ?? num(input.amount_cents);
      return `Refunded ${cents !== undefined ? formatCents(cents) : "an amount"} on ${orderOf(input)}`;
    }
    case "cancel_order":
      return `Cancelled ${orderOf(input)}${str(result.refunded) ? ` and refunded ${str(result.refunded)}` : ""}`;
    case "create_replacement":
      return `Sent a replacement for ${orderOf(input)}${str(result.tracking) ? ` (tracking ${str(result.tracking)})` : ""}`;
    case "update_shipping_address":
      return `Changed the delivery address of ${orderOf(input)} to ${addressInWords(input.address)}`;
    case "lookup_order": {
      const facts = [str(result.status), str(result.total)].filter(Boolean).join(", ");
      return `Looked up order ${orderOf(input)}${facts ? ` — ${facts}` : ""}`;
    }
    case "list_orders": {
      const n = Array.isArray(result.orders) ? result.orders.length : undefined;
      return `Listed the customer's orders${n !== undefined ? ` (${n})` : ""}`;
    }
    case "verify_customer":
      switch (result.status) {
        case "verified":
          return `Verified the customer as ${str(result.name) ?? "the account holder"}${str(result.email) ? ` (${str(result.email)})` : ""}`;
        case "ambiguous":
          return `Could not verify the customer: ${num(result.matches) ?? "several"} customers match — asked for one more identifier`;
        case "not_found": {
          const who = [str(input.email) ?? str(input.name), str(input.order_number) ? `order ${orderOf(input)}` : undefined].filter(
            Boolean,
          );
          return `Could not verify the customer: no account matches ${who.length ? who.join(" with ") : "those details"}`;
        }
        default:
          return "Tried to verify the customer — asked for the account email and an order number";
      }
    case "escalate_to_human": {
      const why = TRIGGER_WORDS[String(input.trigger)];
      return `Handed the conversation to a person${why ? ` (${why})` : ""}`;
    }
    default:
      return `Used ${name}`;
  }
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** A proposed call as a sentence: "Refund $250.00 on A-1002". */
export function requestInWords(name: string, input: unknown): string {
  return capitalise(request(name, obj(input)));
}

/** One recorded tool call in words. */
export function describeToolCall(call: TriedCall): TriedStep {
  const proposed = obj(call.input);
  const ran = call.effectiveInput ? obj(call.effectiveInput) : proposed;
  const result = obj(call.result);
  const review = obj(call.review);
  const by = str(review.by);
  const message = str(result.message);
  const asked = request(call.name, proposed);
  const edited = review.decision === "edited" ? ` — edited by ${by ?? "a reviewer"} (the agent asked to ${asked})` : "";
  switch (call.status) {
    case "SUCCEEDED": {
      const approved = by && review.decision === "approved" ? ` — approved by ${by}` : "";
      return { text: `${done(call.name, ran, result)}${approved}${edited}`, tone: "done" };
    }
    case "PARKED":
      return { text: `Asked to ${asked} — waiting for approval`, tone: "waiting" };
    case "DEFERRED":
      return { text: `Asked to ${asked} — deferred: ${call.gateReason}`, tone: "waiting" };
    case "GATED":
      return { text: `Asked to ${asked} — being checked`, tone: "waiting" };
    case "APPROVED":
    case "EXECUTING":
      return {
        text: `${by ? `Asked to ${asked} — approved by ${by}` : `Started to ${asked}`}${edited}, not finished yet`,
        tone: "waiting",
      };
    case "RETRY_WAIT":
      return { text: `Tried to ${asked} — a temporary failure, will retry${message ? `: ${message}` : ""}`, tone: "waiting" };
    case "DENIED":
      if (review.decision === "denied")
        return {
          text: `Asked to ${asked} — denied by ${by ?? "a reviewer"}${str(review.reason) ? `: ${str(review.reason)}` : ""}`,
          tone: "refused",
        };
      return { text: `Was not allowed to ${asked}: ${call.gateReason}`, tone: "refused" };
    case "EXPIRED":
      return { text: `Asked to ${asked} — the approval expired without a decision`, tone: "refused" };
    case "FAILED":
      return { text: `Tried to ${asked} — failed${message ? `: ${message}` : ""}`, tone: "failed" };
    default:
      return { text: `${capitalise(asked)} (${call.status.toLowerCase()})`, tone: call.isError ? "failed" : "info" };
  }
}

/** A run's tool calls, in order, in words. */
export function describeToolCalls(calls: readonly TriedCall[]): TriedStep[] {
  return calls.map(describeToolCall);
}

/**
 * The lines of a handoff record's `tried` that the agent wrote itself (escalate_to_human's "what you already
 * tried"), without the raw call lines the record adds (`name({...}) → status`), which describeToolCalls says better.
 */
export function agentsOwnAccount(tried: readonly string[]): string[] {
  return tried.filter((t) => !/^[a-z_]+\(.*\) → [a-z_]+/.test(t));
}
