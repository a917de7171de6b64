import { describe, expect, it } from "vitest";
import { agentsOwnAccount, describeToolCall, type TriedCall } from "./agent-tried";

const call = (c: Partial<TriedCall> & Pick<TriedCall, "name" | "status">): TriedCall => ({
  input: {},
  isError: false,
  gateDecision: "allow",
  gateReason: "Allowed.",
  result: null,
  review: null,
  ...c,
});

describe("what the agent tried, in words", () => {
  it.each([
    {
      name: "a lookup, with what it found",
      call: call({
        name: "lookup_order",
        status: "SUCCEEDED",
        input: { order_number: "a-1002" },
        result: { status: "delivered", total: "$250.00" },
      }),
      text: "Looked up order A-1002 — delivered, $250.00",
      tone: "done",
    },
    {
      name: "a refund parked for approval",
      call: call({ name: "refund_order", status: "PARKED", input: { order_number: "A-1002", amount_cents: 25000, reason: "damaged" } }),
      text: "Asked to refund $250.00 on A-1002 — waiting for approval",
      tone: "waiting",
    },
    {
      name: "a refund a reviewer approved, which ran",
      call: call({
        name: "refund_order",
        status: "SUCCEEDED",
        input: { order_number: "A-1002", amount_cents: 25000 },
        result: { status: "refunded", amount_cents: 25000, amount: "$250.00" },
        review: { decision: "approved", by: "Raj" },
      }),
      text: "Refunded $250.00 on A-1002 — approved by Raj",
      tone: "done",
    },
    {
      name: "an edited refund: what ran, and what the agent had asked",
      call: call({
        name: "refund_order",
        status: "SUCCEEDED",
        input: { order_number: "A-1002", amount_cents: 25000 },
        effectiveInput: { order_number: "A-1002", amount_cents: 15000 },
        result: { status: "refunded", amount_cents: 15000 },
        review: { decision: "edited", by: "Rita" },
      }),
      text: "Refunded $150.00 on A-1002 — edited by Rita (the agent asked to refund $250.00 on A-1002)",
      tone: "done",
    },
    {
      name: "a refund a reviewer denied",
      call: call({
        name: "refund_order",
        status: "DENIED",
        isError: true,
        input: { order_number: "A-1002", amount_cents: 25000 },
        review: { decision: "denied", by: "Rita", reason: "Damage predates delivery" },
      }),
      text: "Asked to refund $250.00 on A-1002 — denied by Rita: Damage predates delivery",
      tone: "refused",
    },
    {
      name: "a call the rules refused",
      call: call({
        name: "refund_order",
        status: "DENIED",
        isError: true,
        gateDecision: "deny",
        gateReason: "Refunds above $500.00 are not made by the agent.",
        input: { order_number: "A-1003", amount_cents: 82000 },
      }),
      text: "Was not allowed to refund $820.00 on A-1003: Refunds above $500.00 are not made by the agent.",
      tone: "refused",
    },
    {
      name: "a failed call, with its message",
      call: call({
        name: "verify_customer",
        status: "FAILED",
        isError: true,
        input: { email: "dana@example.com", order_number: "A-1002" },
        result: { error_category: "system", is_retryable: false, message: "The identity service is down." },
      }),
      text: "Tried to verify the customer (dana@example.com, order A-1002) — failed: The identity service is down.",
      tone: "failed",
    },
    {
      name: "a verification",
      call: call({
        name: "verify_customer",
        status: "SUCCEEDED",
        input: { email: "dana@example.com", order_number: "A-1002" },
        result: { status: "verified", name: "Dana Reyes", email: "dana@example.com" },
      }),
      text: "Verified the customer as Dana Reyes (dana@example.com)",
      tone: "done",
    },
    {
      name: "an ambiguous verification",
      call: call({
        name: "verify_customer",
        status: "SUCCEEDED",
        input: { name: "Alex Kim" },
        result: { status: "ambiguous", matches: 2 },
      }),
      text: "Could not verify the customer: 2 customers match — asked for one more identifier",
      tone: "done",
    },
    {
      name: "an expired approval",
      call: call({ name: "cancel_order", status: "EXPIRED", input: { order_number: "A-2001" } }),
      text: "Asked to cancel A-2001 — the approval expired without a decision",
      tone: "refused",
    },
    {
      name: "an address change",
      call: call({
        name: "update_shipping_address",
        status: "SUCCEEDED",
        input: { order_number: "A-2002", address: { line1: "12 New Street", city: "Springfield", postalCode: "12345", country: "US" } },
      }),
      text: "Changed the delivery address of A-2002 to 12 New Street, Springfield 12345, US",
      tone: "done",
    },
    {
      name: "an escalation",
      call: call({ name: "escalate_to_human", status: "SUCCEEDED", input: { trigger: "customer_request", summary: "wants a human" } }),
      text: "Handed the conversation to a person (the customer asked for a person)",
      tone: "done",
    },
    {
      name: "a transient failure waiting for its retry",
      call: call({
        name: "create_replacement",
        status: "RETRY_WAIT",
        isError: true,
        input: { order_number: "A-2003" },
        result: { message: "Fulfilment timed out." },
      }),
      text: "Tried to send a replacement for A-2003 — a temporary failure, will retry: Fulfilment timed out.",
      tone: "waiting",
    },
    {
      name: "a tool it does not know",
      call: call({ name: "price_match", status: "DENIED", gateDecision: "deny", gateReason: "price_match is not allowed." }),
      text: "Was not allowed to use price_match: price_match is not allowed.",
      tone: "refused",
    },
  ])("$name", ({ call: c, text, tone }) => {
    const step = describeToolCall(c);
    expect(step.text).toBe(text);
    expect(step.tone).toBe(tone);
    expect(step.text).not.toMatch(/[{}]/); // never JSON
  });

  it("keeps the agent's own account of what it tried, without the raw call lines", () => {
    expect(
      agentsOwnAccount([
        "Checked the tracking page; the carrier says lost",
        'lookup_order({"order_number":"A-1003"}) → succeeded',
        'refund_order({"order_number":"A-1003","amount_cents":82000}) → denied (error)',
      ]),
    ).toEqual(["Checked the tracking page; the carrier says lost"]);
  });
});
