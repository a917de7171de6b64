// The offline model as coordinator and as specialist, end to end through the runtime (no script): a customer's own
// words reach the right specialist, its gated refund parks the whole run, and after every process is rebuilt the
// approval runs the refund once and the customer is told only what happened.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import { createModelClient } from "@/lib/model/client";
import { createOfflineFetch, OfflineScript } from "@/lib/model/offline";
import { resumeRun } from "@/lib/runtime/resume";

let h: Harness;
beforeEach(async () => {
  h = await createHarness({ specialists: true });
});
afterEach(async () => {
  await h.close();
});

const dana = { customer: "dana@example.com" };

/** A fresh model client: nothing carried over from the process that parked the run. */
const restartedDeps = (name: string) =>
  h.newDeps(name, createModelClient({ fetch: createOfflineFetch({ script: new OfflineScript() }), maxRetries: 0, timeoutMs: 5000 }));

async function callsOf(runId: string) {
  return h.db.toolCall.findMany({ where: { runId }, orderBy: [{ createdAt: "asc" }, { position: "asc" }] });
}
const effectsOf = async (tool: string) => (await h.effects()).filter((e) => e.toolName === tool);

async function agentReplies(conversationId: string): Promise<string[]> {
  const rows = await h.db.message.findMany({
    where: { conversationId, shownToCustomer: true, role: "assistant" },
    orderBy: { seq: "asc" },
  });
  return rows.map((r) => r.displayText ?? "");
}

describe("the offline coordinator hands specialist-level cases to the specialists it is offered", () => {
  it("a torn jacket, in the customer's words: the returns specialist refunds it, parked for a reviewer, approved after a restart", async () => {
    const out = await h.say("the backpack from A1002 showed up torn, I want my money back", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const calls = await callsOf(out.runId!);
    expect(calls.map((c) => [c.name, c.status, c.scope === null ? "agent" : "specialist"])).toEqual([
      ["ask_returns_specialist", "APPROVED", "agent"],
      ["lookup_order", "SUCCEEDED", "specialist"],
      ["refund_order", "PARKED", "specialist"],
    ]);
    expect(calls[0]!.input).toMatchObject({ order_number: "A-1002", task: expect.stringContaining("A-1002") });
    expect(calls[2]!.input).toMatchObject({ order_number: "A-1002", amount_cents: 25000 });
    const handoffs = await h.db.handoff.findMany({ where: { runId: out.runId! } });
    expect(handoffs).toHaveLength(1);
    expect(handoffs[0]!.payload).toMatchObject({
      specialist: "Returns & refunds specialist",
      toolName: "refund_order",
      amountCents: 25000,
    });
    expect(await effectsOf("refund_order")).toHaveLength(0);
    expect((await agentReplies(out.conversationId)).join(" ")).not.toMatch(/I've refunded/);

    const { outcome, advanced } = await resumeRun(
      restartedDeps("restarted"),
      { tenantId: h.acme.id, staffId: h.staff.raj.id },
      { handoffId: handoffs[0]!.id, decision: "approve" },
    );
    expect(outcome.kind).toBe("approved");
    expect(advanced?.phase).toBe("COMPLETED");
    expect(await effectsOf("refund_order")).toHaveLength(1);
    const last = (await agentReplies(out.conversationId)).at(-1)!;
    expect(last).toMatch(/our team approved it/i);
    expect(last).toMatch(/refunded \$250\.00 on order A-1002/);
    // The specialist's report was written from its tool results; the stop check never had to correct the reply.
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(run.corrections).toBe(0);
    expect((await h.db.agentTurn.findFirstOrThrow({ where: { runId: out.runId! } })).status).toBe("done");
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("a reviewer's denial reaches the customer as a denial: nothing refunded, nothing claimed", async () => {
    const out = await h.say("A-1002 arrived damaged, can I get what I paid put back on my card?", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const [handoff] = await h.db.handoff.findMany({ where: { runId: out.runId! } });
    await h.decide(handoff!.id, "raj@acme.test", "deny", { reason: "the item was used for months" });
    expect(await effectsOf("refund_order")).toHaveLength(0);
    const last = (await agentReplies(out.conversationId)).at(-1)!;
    expect(last).toMatch(/declined it: the item was used for months/);
    expect(last).not.toMatch(/I've refunded/);
  });

  it("a small refund within the automatic limit is done by the specialist at once, and said so", async () => {
    const out = await h.say("my socks order A-1001 came with holes in everything, refund me please", dana);
    expect(out.phase).toBe("COMPLETED");
    expect(await effectsOf("refund_order")).toHaveLength(1);
    expect(out.replies.map((r) => r.text).join(" ")).toMatch(/I've refunded \$42\.50 on order A-1001/);
  });

  it("money back for a parcel lost on the way: the delivery specialist consults the returns specialist, two levels deep", async () => {
    const out = await h.say("A-1003 never showed up!! I want $150 back for the poles at least", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const calls = await callsOf(out.runId!);
    expect(calls.map((c) => c.name)).toEqual([
      "ask_delivery_specialist",
      "lookup_order",
      "ask_returns_specialist",
      "lookup_order",
      "refund_order",
    ]);
    const handoffs = await h.db.handoff.findMany({ where: { runId: out.runId! } });
    expect(handoffs).toHaveLength(1);
    expect(handoffs[0]!.payload).toMatchObject({
      specialist: "Delivery problems specialist → Returns & refunds specialist",
      amountCents: 15000,
    });
    const { advanced } = await resumeRun(
      restartedDeps("restarted-2"),
      { tenantId: h.acme.id, staffId: h.staff.raj.id },
      { handoffId: handoffs[0]!.id, decision: "approve" },
    );
    expect(advanced?.phase).toBe("COMPLETED");
    expect(await effectsOf("refund_order")).toHaveLength(1);
    expect((await agentReplies(out.conversationId)).at(-1)).toMatch(/refunded \$150\.00 on order A-1003/);
  });

  it("a status question is answered by the agent itself", async () => {
    const out = await h.say("where's my order A-1001 at?", dana);
    expect(out.phase).toBe("COMPLETED");
    expect((await callsOf(out.runId!)).map((c) => c.name)).toEqual(["lookup_order"]);
  });
});

describe("without the specialists offered", () => {
  it("the agent refunds itself and never calls a specialist", async () => {
    await h.publish((r) => ({ ...r, allowedTools: r.allowedTools.filter((t) => !t.endsWith("_specialist")) }));
    const out = await h.say("the backpack from A1002 showed up torn, I want my money back", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    expect((await callsOf(out.runId!)).map((c) => [c.name, c.scope])).toEqual([
      ["lookup_order", null],
      ["refund_order", null],
    ]);
  });
});
