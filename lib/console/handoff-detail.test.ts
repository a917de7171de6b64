import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "@/test/runtime-harness";
import { decisionInWords } from "./decision-words";
import { handoffDetail } from "./queries";

// The reviewer's full picture of a handoff, from conversations the real runtime ran through the offline model.

let h: Harness;
let refund: { handoffId: string; conversationId: string };
let cancel: { handoffId: string };

const pendingOf = async (conversationId: string) => (await h.pendingHandoffs()).find((x) => x.conversationId === conversationId)!.id;

beforeAll(async () => {
  h = await createHarness();
  // Dana's history first: a refund the agent made by itself on another order.
  await h.say("I'm dana@example.com, please refund order A-1001 — the zipper broke.");
  const out = await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
  refund = { handoffId: await pendingOf(out.conversationId), conversationId: out.conversationId };
  // Sam's: a replacement on one order, then a cancellation waiting for a person.
  await h.say("I'm sam@example.com, order A-2003 arrived broken, can you send me a replacement for A-2003?");
  const c = await h.say("I'm sam@example.com. Please cancel order A-2001, I ordered the wrong size.");
  cancel = { handoffId: await pendingOf(c.conversationId) };
});
afterAll(async () => {
  await h?.close();
});

describe("the handoff's full picture", () => {
  it("the order: status, items, amounts, delivery and tracking", async () => {
    const d = await handoffDetail(h.db, h.acme.id, refund.handoffId);
    expect(d.order.order).toMatchObject({
      number: "A-1002",
      status: "delivered",
      note: "arrived damaged",
      totalCents: 25000,
      refundedCents: 0,
      refundableCents: 25000,
      items: [{ name: "Alpine 45L backpack", quantity: 1, unitPriceCents: 25000, lineCents: 25000 }],
      shipments: [{ kind: "original", carrier: "UPS", status: "delivered" }],
      refunds: [],
    });
    expect(d.order.order!.shipments[0]!.tracking).toMatch(/^1Z/);
    expect(d.order.verifiedAsOwner).toBe(true);
  });

  it("what was already refunded or replaced for the customer, with dates", async () => {
    const dana = await handoffDetail(h.db, h.acme.id, refund.handoffId);
    expect(dana.order.customer).toMatchObject({ name: "Dana Reyes", email: "dana@example.com", orderCount: 4 });
    expect(dana.order.history).toEqual([expect.objectContaining({ kind: "refund", orderNumber: "A-1001", amountCents: 4250 })]);
    expect(Date.parse(dana.order.history[0]!.at)).toBeGreaterThan(Date.now() - 60_000);
    expect(dana.order.historyTotals).toEqual({ refundedCents: 4250, refunds: 1, replacements: 0 });

    const sam = await handoffDetail(h.db, h.acme.id, cancel.handoffId);
    expect(sam.order.order).toMatchObject({ number: "A-2001", status: "processing", items: [{ name: "Rain shell, size M" }] });
    expect(sam.order.history).toEqual([expect.objectContaining({ kind: "replacement", orderNumber: "A-2003" })]);
    expect(sam.order.history[0]!.detail).toMatch(/^UPS 1ZR\w+ — label created$/);
  });

  it("the conversation inline, the customer's words apart from the agent's, the tries in words, the rule", async () => {
    const d = await handoffDetail(h.db, h.acme.id, refund.handoffId);
    expect(d.messages.map((m) => m.from)).toEqual(["customer", "system"]);
    expect(d.messages[0]!.text).toBe("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
    expect(d.messages[1]!.text).toMatch(/refund for A-1002 is with our team/);
    expect(d.customerWords).toEqual(["Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it."]);
    expect(d.agentReason).toBe((d.handoff.proposedInput as { reason: string }).reason);
    expect(d.tried.map((t) => t.text)).toContain("Asked to refund $250.00 on A-1002 — waiting for approval");
    for (const t of d.tried) expect(t.text).not.toMatch(/[{}]/);
    expect(d.stoppedBy).toEqual([
      expect.objectContaining({ gate: "refund_policy", decision: "ask", policyVersion: 1, toolName: "refund_order" }),
    ]);
  });

  it("after the decision: who decided what, when — in words", async () => {
    await h.decide(refund.handoffId, "raj@acme.test", "edit", {
      input: { order_number: "A-1002", amount_cents: 15000, reason: "partial refund for the damage" },
    });
    const d = await handoffDetail(h.db, h.acme.id, refund.handoffId);
    expect(d.handoff.approvals).toEqual([expect.objectContaining({ name: "Raj" })]);
    const lines = decisionInWords({
      ...d.handoff,
      call: d.toolCall ? { status: d.toolCall.status, result: d.toolCall.result } : null,
    });
    const reason = (d.handoff.proposedInput as { reason: string }).reason;
    expect(lines[0]).toBe(`Edited by Raj: amount: $250.00 → $150.00; reason: “${reason}” → “partial refund for the damage”`);
    expect(lines[1]).toMatch(/^Approved by Raj on .+ — \$150\.00 refunded$/);
    expect(d.order.order).toMatchObject({
      refundedCents: 15000,
      refunds: [{ amountCents: 15000, reason: "partial refund for the damage" }],
    });
    expect(d.tried.map((t) => t.text)).toContain(
      "Refunded $150.00 on A-1002 — edited by Raj (the agent asked to refund $250.00 on A-1002)",
    );
  });

  it("another shop's handoff is not found", async () => {
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    await expect(handoffDetail(h.db, globex.id, refund.handoffId)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});
