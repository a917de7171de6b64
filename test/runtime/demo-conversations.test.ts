import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";

// The offline model carries the demo shop's conversations by itself, from free text as customers write.
let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const shown = (out: { replies: Array<{ text: string }> }) => out.replies.map((r) => r.text).join("\n");
async function toolNames(runId: string) {
  return (await h.db.toolCall.findMany({ where: { runId }, orderBy: [{ messageSeq: "asc" }, { position: "asc" }] })).map(
    (c) => `${c.name}:${c.status}`,
  );
}

describe("demo conversations through the offline model", () => {
  it("verifies from free text, then answers an order status", async () => {
    const first = await h.say("hi, where is my order?");
    expect(first.phase).toBe("COMPLETED");
    expect(shown(first)).toMatch(/email/i);
    const second = await h.say("it's dana@example.com and the order is A-1003", { conversationId: first.conversationId });
    expect(await toolNames(second.runId!)).toEqual(expect.arrayContaining(["verify_customer:SUCCEEDED", "lookup_order:SUCCEEDED"]));
    expect(shown(second)).toMatch(/A-1003/);
    expect(shown(second)).toMatch(/lost/i);
    const conv = await h.db.conversation.findUniqueOrThrow({ where: { id: first.conversationId } });
    expect(conv.verifiedCustomerId).not.toBeNull();
    expect(conv.verificationExpiresAt!.getTime()).toBeGreaterThan(Date.now());
  });

  it("refund in the automatic band runs at once", async () => {
    const out = await h.say("I'm dana@example.com, please refund order A-1001 — the zipper broke.");
    expect(out.phase).toBe("COMPLETED");
    expect(shown(out)).toMatch(/\$42\.50/);
    expect(await h.effects()).toHaveLength(1);
  });

  it("refund above the ceiling is refused and escalated, with nothing executed", async () => {
    const out = await h.say("I'm dana@example.com. Order A-1003 never arrived, I want a refund for A-1003.");
    expect(await h.effects()).toHaveLength(0);
    const esc = await h.db.handoff.findMany({ where: { conversationId: out.conversationId, kind: "ESCALATION" } });
    expect(esc).toHaveLength(1);
    expect(shown(out)).toMatch(/person|team/i);
    expect(shown(out)).not.toMatch(/I've refunded/i);
  });

  it("replacement within the automatic limit", async () => {
    const out = await h.say("I'm sam@example.com, order A-2003 arrived broken, can you send me a replacement for A-2003?");
    expect(await toolNames(out.runId!)).toContain("create_replacement:SUCCEEDED");
    expect(shown(out)).toMatch(/replacement/i);
  });

  it("cancellation waits for a person, then the outcome is explained", async () => {
    const out = await h.say("I'm sam@example.com. Please cancel order A-2001, I ordered the wrong size.");
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    expect(shown(out)).toMatch(/cancel A-2001 is with our team/);
    const decided = await h.decide(out.handoffs[0]!.id, "rita@acme.test", "approve");
    expect(shown(decided)).toMatch(/cancel/i);
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-2001" } });
    expect(order.status).toBe("cancelled");
  });

  it("address change on a processing order (email, order number and the current address's postcode)", async () => {
    const ask = await h.say("I'm sam@example.com. Please change the address of A-2002 to 12 New Street, Springfield, 12345, US");
    expect(shown(ask)).toMatch(/postcode/);
    const out = await h.say("98101", { conversationId: ask.conversationId });
    expect(await toolNames(out.runId!)).toContain("update_shipping_address:SUCCEEDED");
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-2002" } });
    expect(order.shippingAddress).toMatchObject({ line1: "12 New Street", city: "Springfield" });
  });

  it("asking for a person escalates at once, without verification", async () => {
    const out = await h.say("I want to talk to a human please");
    expect(await toolNames(out.runId!)).toEqual(["escalate_to_human:SUCCEEDED"]);
    const [esc] = await h.db.handoff.findMany({ where: { conversationId: out.conversationId } });
    expect(esc!.payload).toMatchObject({ trigger: "customer_request" });
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: out.conversationId } })).status).toBe("escalated");
  });

  it("a request no policy covers is escalated as a policy gap", async () => {
    const out = await h.say("I'm dana@example.com, order A-1001. Can you price match a competitor's offer on A-1001?");
    const [esc] = await h.db.handoff.findMany({ where: { conversationId: out.conversationId, kind: "ESCALATION" } });
    expect(esc!.payload).toMatchObject({ trigger: "policy_gap" });
  });

  it("two concerns in one message: both handled, the reply answers both", async () => {
    const out = await h.say("I'm dana@example.com. Where is A-1003? Also please refund A-1001, it broke.");
    const names = await toolNames(out.runId!);
    expect(names).toEqual(expect.arrayContaining(["lookup_order:SUCCEEDED", "refund_order:SUCCEEDED"]));
    expect(shown(out)).toMatch(/A-1003/);
    expect(shown(out)).toMatch(/A-1001/);
  });

  it("two Alex Kims: asks for one more identifier and takes no action", async () => {
    const out = await h.say("Hi, I'm Alex Kim. Please refund my last order.");
    const names = await toolNames(out.runId!);
    expect(names.every((n) => n.startsWith("verify_customer"))).toBe(true);
    expect(shown(out)).toMatch(/email|order number/i);
    expect(await h.effects()).toHaveLength(0);
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: out.conversationId } })).verifiedCustomerId).toBeNull();
  });

  it("a signed-in customer (shop-signed identity) skips verification", async () => {
    const out = await h.say("where is A-1001?", { customer: "dana@example.com" });
    expect(await toolNames(out.runId!)).toEqual(["lookup_order:SUCCEEDED"]);
    expect(shown(out)).toMatch(/delivered/i);
  });
});
