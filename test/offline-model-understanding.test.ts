import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "./runtime-harness";

// The four messages from the issue that used to get "Sorry, I'm not sure I understood", sent through the whole
// loop (runtime, gates, tools, database) with the offline model under the real SDK client.
let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const shown = (out: { replies: Array<{ text: string }> }) => out.replies.map((r) => r.text).join("\n");
async function calls(runId: string) {
  const rows = await h.db.toolCall.findMany({ where: { runId }, orderBy: [{ messageSeq: "asc" }, { position: "asc" }] });
  return rows.map((c) => ({ name: c.name, input: c.input as Record<string, unknown>, status: c.status }));
}

describe("the offline model understands the issue's customers, end to end", () => {
  it('"the jacket from A-1002 showed up torn, I want my money" → a $250 refund on A-1002, parked for approval', async () => {
    const out = await h.say("the jacket from A-1002 showed up torn, I want my money", { customer: "dana@example.com" });
    expect(shown(out)).not.toMatch(/not sure I understood/i);
    const refund = (await calls(out.runId!)).find((c) => c.name === "refund_order");
    expect(refund?.input).toMatchObject({ order_number: "A-1002", amount_cents: 25000 });
    expect(String(refund?.input.reason)).toMatch(/torn/);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL"); // $100–$500 needs a reviewer
    expect(shown(out)).toMatch(/\$250\.00/);
    expect(await h.effects()).toHaveLength(0);
  });

  it('"hii, cn u refnd my ordr A1001 pls" → A-1001 refunded at once ($42.50, the automatic band)', async () => {
    const out = await h.say("hii, cn u refnd my ordr A1001 pls", { customer: "dana@example.com" });
    expect(shown(out)).not.toMatch(/not sure I understood/i);
    expect(await calls(out.runId!)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "refund_order", input: expect.objectContaining({ order_number: "A-1001", amount_cents: 4250 }) }),
      ]),
    );
    expect(out.phase).toBe("COMPLETED");
    expect(shown(out)).toMatch(/refunded \$42\.50 on order A-1001/);
    expect(await h.effects()).toHaveLength(1);
  });

  it('"is there any way to get what I paid for A-2003 put back on my card?" → verified from the text, then a refund on A-2003', async () => {
    const out = await h.say("is there any way to get what I paid for A-2003 put back on my card? it's sam@example.com");
    expect(shown(out)).not.toMatch(/not sure I understood/i);
    const made = await calls(out.runId!);
    expect(made[0]).toMatchObject({ name: "verify_customer", input: { email: "sam@example.com", order_number: "A-2003" } });
    expect(made.find((c) => c.name === "refund_order")?.input).toMatchObject({ order_number: "A-2003", amount_cents: 18000 });
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
  });

  it('"A-1003 never showed up. I want the full $820 back today." → $820 asked, above the ceiling: refused and escalated', async () => {
    const out = await h.say("A-1003 never showed up. I want the full $820 back today.", { customer: "dana@example.com" });
    expect(shown(out)).not.toMatch(/not sure I understood/i);
    const refund = (await calls(out.runId!)).find((c) => c.name === "refund_order");
    expect(refund?.input).toMatchObject({ order_number: "A-1003", amount_cents: 82000, reason: "never showed up" });
    const escalations = await h.db.handoff.findMany({ where: { conversationId: out.conversationId, kind: "ESCALATION" } });
    expect(escalations).toHaveLength(1);
    expect(await h.effects()).toHaveLength(0);
    expect(shown(out)).toMatch(/person|team/i);
  });

  it("a complaint that answers the model's question is the reason for the open request, not a new status question", async () => {
    const first = await h.say("I just want my money back");
    expect(shown(first)).toMatch(/email/i);
    const second = await h.say("dana@example.com, order A1001 — the strap came torn", { conversationId: first.conversationId });
    const made = await calls(second.runId!);
    expect(made.map((c) => c.name)).toEqual(["verify_customer", "lookup_order", "refund_order"]);
    expect(made[2]!.input).toMatchObject({ order_number: "A-1001", amount_cents: 4250 });
    expect(second.phase).toBe("COMPLETED");
    expect(shown(second)).toMatch(/refunded \$42\.50 on order A-1001/);
    expect(shown(second)).not.toMatch(/was delivered/); // no status report nobody asked for
  });

  it("a message that asks nothing the model knows still gets the honest 'not sure' answer", async () => {
    const out = await h.say("blue cheese or cheddar?", { customer: "dana@example.com" });
    expect(shown(out)).toMatch(/not sure I understood/i);
    expect(await calls(out.runId!)).toEqual([]);
  });
});
