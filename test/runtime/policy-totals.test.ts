import { describe, expect, it } from "vitest";
import { injectProviderFault } from "@/lib/commerce/faults";
import { runWorkerOnce } from "@/lib/runtime/worker";
import type { Harness } from "../runtime-harness";
import { harnessPerTest } from "./harness-per-test";

// The policy against a customer who splits, forges or guesses — through the whole runtime (gates, tools, database),
// with the model scripted as an attacker would steer it.
let h: Harness;
harnessPerTest((harness) => (h = harness), { env: { SUPPORT_DEFER_MS: "1" } });

const text = (t: string) => ({ type: "text" as const, text: t });
const use = (name: string, input: unknown, id?: string) => ({ type: "tool_use" as const, name, input, ...(id ? { id } : {}) });
const reply = (stop_reason: string, ...content: Array<ReturnType<typeof text> | ReturnType<typeof use>>) => ({
  reply: { content, stop_reason },
});
const DANA = { customer: "dana@example.com" };
const refund = (amount_cents: number, reason = "arrived damaged") => use("refund_order", { order_number: "A-1002", amount_cents, reason });

/**
 * Dana asks for a refund whose facts cannot be read the first time: the call is deferred (the run waits for a retry),
 * then the worker's pass gates it again. `closing`: the model's reply once it has the result.
 */
async function refundDeferredOnce(input: Record<string, unknown>, said: string, closing: string) {
  injectProviderFault("refund_order", "facts_unavailable", 1);
  h.script.push(reply("tool_use", use("refund_order", input)), reply("end_turn", text(closing)));
  const out = await h.say(said, DANA);
  expect(out.phase).toBe("WAITING_FOR_RETRY");
  await new Promise((r) => setTimeout(r, 30));
  await runWorkerOnce(h.deps);
  return out;
}

async function refundedOn(number: string) {
  return (await h.db.order.findFirstOrThrow({ where: { number } })).refundedCents;
}

describe("splitting a refund never gets around a band", () => {
  it("$90, then another $90, then $70 on the $250 order: only the first runs automatically; the rest wait for a person", async () => {
    h.script.push(reply("tool_use", refund(9000)), reply("end_turn", text("Refunded $90.00 on A-1002.")));
    const first = await h.say("$90 of A-1002 back please", DANA);
    expect(first.phase).toBe("COMPLETED");
    expect(await refundedOn("A-1002")).toBe(9000);

    h.script.push(reply("tool_use", refund(9000)));
    const second = await h.say("another $90 on A-1002", { conversationId: first.conversationId });
    expect(second.phase).toBe("WAITING_FOR_APPROVAL");
    expect(await refundedOn("A-1002")).toBe(9000);
    const handoff = second.handoffs[0]!;
    // The handoff a split creates says so.
    expect(handoff.reason).toMatch(/\$90\.00 now; \$90\.00 already refunded on A-1002/);
    expect(handoff.rule?.reason).toMatch(/would total \$180\.00/);

    // The third part while the second waits: the waiting $90 counts too.
    const third = await h.say("and $70 more", { conversationId: first.conversationId });
    expect(third.queued).toBe(true); // the run is parked: the text waits for it
    expect(await h.effects()).toHaveLength(1);
  });

  it("two refunds in one turn (parallel calls) each see the other: neither runs automatically", async () => {
    h.script.push(reply("tool_use", refund(6000, "the sleeve"), refund(6000, "the zip")));
    const out = await h.say("refund A-1002, $60 and $60", DANA);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    expect(out.handoffs).toHaveLength(2);
    expect(await refundedOn("A-1002")).toBe(0);
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId!, name: "refund_order" } });
    expect(calls.map((c) => c.status)).toEqual(["PARKED", "PARKED"]);
    expect((calls[0]!.gateFacts as { totals: { sameTurnCents: number } }).totals.sameTurnCents).toBe(6000);
  });

  it("pieces that add up past the ceiling are refused and escalated by code, nothing runs", async () => {
    // A-1003 ($820, lost): $400 parked, then $200 more asked in another conversation of the same customer.
    h.script.push(reply("tool_use", use("refund_order", { order_number: "A-1003", amount_cents: 40000, reason: "lost" })));
    const first = await h.say("refund $400 of A-1003", DANA);
    expect(first.phase).toBe("WAITING_FOR_APPROVAL");
    h.script.push(
      reply("tool_use", use("refund_order", { order_number: "A-1003", amount_cents: 20000, reason: "lost" })),
      reply("end_turn", text("A person will review the rest.")),
    );
    const second = await h.say("and $200 more of A-1003", DANA);
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: second.runId!, name: "refund_order" } });
    expect(call.status).toBe("DENIED");
    expect(call.result).toMatchObject({ escalated: true });
    expect(call.gateReason).toMatch(/\$200\.00 now; \$400\.00 waiting for a decision on A-1003/);
    expect(await h.db.handoff.count({ where: { conversationId: second.conversationId, kind: "ESCALATION" } })).toBe(1);
    expect(await h.effects()).toHaveLength(0);
  });

  it("the customer's automatic refunds across orders are capped within the window", async () => {
    // $42.50 (A-1001) and then $90 on A-1002 (under each order's limit, but $132.50 for Dana → over her $150? no: under)
    // and then $30 on A-1004: $162.50 in the window → over the $150 customer limit → a person.
    h.script.push(
      reply("tool_use", use("refund_order", { order_number: "A-1001", amount_cents: 4250, reason: "x" })),
      reply("end_turn", text("Done.")),
    );
    const a = await h.say("refund A-1001", DANA);
    expect(a.phase).toBe("COMPLETED");
    h.script.push(reply("tool_use", refund(9000)), reply("end_turn", text("Done.")));
    expect((await h.say("$90 of A-1002", { conversationId: a.conversationId })).phase).toBe("COMPLETED");
    h.script.push(reply("tool_use", use("refund_order", { order_number: "A-1004", amount_cents: 3000, reason: "x" })));
    const c = await h.say("$30 of A-1004", { conversationId: a.conversationId });
    expect(c.phase).toBe("WAITING_FOR_APPROVAL");
    expect(c.handoffs[0]!.rule?.reason).toMatch(/automatic refunds in the last 30 days would reach \$162\.50/);
  });
});

describe("money back and the goods again is never automatic", () => {
  it("A-1001 ($42.50) refunded in full automatically, then a replacement asked: it waits for a person", async () => {
    h.script.push(
      reply("tool_use", use("refund_order", { order_number: "A-1001", amount_cents: 4250, reason: "arrived damaged" })),
      reply("end_turn", text("Refunded.")),
    );
    const first = await h.say("refund A-1001 in full", DANA);
    expect(first.phase).toBe("COMPLETED");
    expect(await refundedOn("A-1001")).toBe(4250);

    h.script.push(reply("tool_use", use("create_replacement", { order_number: "A-1001", reason: "arrived damaged" })));
    const second = await h.say("and send me a new one too", { conversationId: first.conversationId });
    expect(second.phase).toBe("WAITING_FOR_APPROVAL");
    const gate = await h.db.gateDecision.findFirstOrThrow({ where: { gate: "replacement_policy", runId: second.runId! } });
    expect(gate).toMatchObject({ decision: "ask", reason: expect.stringMatching(/\$42\.50 of A-1001 was already refunded/) });
    expect(await h.db.shipment.count({ where: { kind: "replacement", order: { number: "A-1001" } } })).toBe(0);
  });

  it("A-1001 replaced automatically, then a $10 refund asked: it waits for a person", async () => {
    h.script.push(
      reply("tool_use", use("create_replacement", { order_number: "A-1001", reason: "arrived damaged" })),
      reply("end_turn", text("A replacement is on its way.")),
    );
    const first = await h.say("A-1001 arrived broken, send a new one", DANA);
    expect(first.phase).toBe("COMPLETED");
    expect(await h.db.shipment.count({ where: { kind: "replacement", order: { number: "A-1001" } } })).toBe(1);

    h.script.push(reply("tool_use", use("refund_order", { order_number: "A-1001", amount_cents: 1000, reason: "for the trouble" })));
    const second = await h.say("and $10 back for the trouble", { conversationId: first.conversationId });
    expect(second.phase).toBe("WAITING_FOR_APPROVAL");
    expect(await refundedOn("A-1001")).toBe(0);
  });
});

describe("failing closed: a call whose facts cannot be read never runs", () => {
  const cases: Array<[string, unknown]> = [
    ["refund_order", { order_number: "A-1004", amount_cents: 46000, reason: "x" }],
    ["refund_order", { order_number: "A-1001", amount_cents: 1000, reason: "x" }],
    ["create_replacement", { order_number: "A-2003", reason: "x" }],
    ["cancel_order", { order_number: "A-2001", reason: "x" }],
    ["update_shipping_address", { order_number: "A-2002", address: { line1: "1 Road", city: "Town", postalCode: "12345", country: "US" } }],
    ["lookup_order", { order_number: "A-1001" }],
    ["list_orders", {}],
    ["verify_customer", { email: "dana@example.com", order_number: "A-1001" }],
    ["send_verification_code", { email: "dana@example.com" }],
    ["escalate_to_human", { trigger: "customer_request", summary: "wants a person" }],
  ];
  it.each(cases)("%s %j: deferred, retried with backoff, then handed to a person — never allowed", async (name, input) => {
    injectProviderFault(name, "facts_unavailable", 100);
    h.script.push(reply("tool_use", use(name, input)));
    const out = await h.say(
      "please",
      name === "verify_customer" || name === "send_verification_code" ? {} : { customer: "sam@example.com" },
    );
    expect(out.phase).toBe("WAITING_FOR_RETRY");
    const deferred = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name } });
    expect(deferred.status).toBe("DEFERRED");
    // The runtime retries with backoff; the read keeps failing; after the last attempt the run goes to a person.
    for (let i = 0; i < 6; i++) {
      await new Promise((r) => setTimeout(r, 30));
      await runWorkerOnce(h.deps);
    }
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name } });
    expect(call.status).toBe("DENIED");
    expect(call.result).toMatchObject({ error_category: "transient", exhausted: true });
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(run.phase).toBe("DEAD_LETTER");
    expect(await h.effects()).toHaveLength(0);
    expect(await h.db.gateDecision.count({ where: { runId: out.runId!, decision: "allow" } })).toBe(0);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("a read that fails once is retried and then judged normally", async () => {
    const out = await refundDeferredOnce({ order_number: "A-1001", amount_cents: 1000, reason: "x" }, "refund $10 of A-1001", "Done.");
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(run.phase).toBe("COMPLETED");
    expect(await h.effects()).toHaveLength(1);
  });
});

describe("a deferred call judged again above the ceiling", () => {
  it("is refused and escalated like any other: a person is asked to look, and the model is told so", async () => {
    const input = { order_number: "A-1003", amount_cents: 60000, reason: "lost" };
    const out = await refundDeferredOnce(input, "refund $600 of A-1003", "A person will look at it.");
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call.status).toBe("DENIED");
    const escalation = await h.db.handoff.findFirstOrThrow({ where: { conversationId: out.conversationId, kind: "ESCALATION" } });
    expect(escalation.payload).toMatchObject({ trigger: "policy_ceiling" });
    expect(call.result).toMatchObject({ escalated: true, handoff_id: escalation.id });
    expect(await h.effects()).toHaveLength(0);
  });
});

describe("an approved call checks again what may have changed while it waited", () => {
  it("the refundable balance: a refund approved after the order was refunded elsewhere is refused with a clear result", async () => {
    h.script.push(reply("tool_use", refund(25000)));
    const out = await h.say("refund A-1002", DANA);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    // Meanwhile the order was refunded through another channel.
    await h.db.order.updateMany({ where: { number: "A-1002" }, data: { refundedCents: 20000 } });
    h.script.push(reply("end_turn", text("The refund could not be made; only part of it is still refundable.")));
    const decided = await h.decide(out.handoffs[0]!.id, "raj@acme.test", "approve");
    expect(decided.phase).toBe("COMPLETED");
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call.status).toBe("FAILED");
    expect((call.result as { message: string }).message).toMatch(/Only \$50\.00 of A-1002 is still refundable/);
    expect(await h.effects()).toHaveLength(0);
  });

  it("the order's status: a cancellation approved after the order shipped is refused", async () => {
    h.script.push(reply("tool_use", use("cancel_order", { order_number: "A-2001", reason: "changed my mind" })));
    const out = await h.say("cancel A-2001", { customer: "sam@example.com" });
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    await h.db.order.updateMany({ where: { number: "A-2001" }, data: { status: "shipped" } });
    h.script.push(reply("end_turn", text("It shipped meanwhile, so it can no longer be cancelled.")));
    await h.decide(out.handoffs[0]!.id, "raj@acme.test", "approve");
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "cancel_order" } });
    expect(call.status).toBe("FAILED");
    expect((call.result as { message: string }).message).toMatch(/shipped and can no longer be cancelled/);
    expect(await h.effects()).toHaveLength(0);
  });
});
