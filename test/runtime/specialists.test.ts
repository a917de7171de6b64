// Specialists run as tools (DESIGN §2.5, seed 003): a gated call inside one parks the whole run, the decision travels
// down as data, and resuming rebuilds everything from the database. Each failure the seed describes is a test here.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Harness } from "../runtime-harness";
import { endTurn, harnessWithSpecialists, type Role, roleOf, text, toolUse, use } from "./specialist-script";
import { createModelClient } from "@/lib/model/client";
import { createOfflineFetch, OfflineScript } from "@/lib/model/offline";
import type { OfflineRequest, OfflineStep } from "@/lib/model/offline/types";
import { decideHandoff, resumeRun } from "@/lib/runtime/resume";
import { runWorkerOnce } from "@/lib/runtime/worker";
import { AppError } from "@/lib/errors";

let h: Harness;
beforeEach(async () => {
  h = await harnessWithSpecialists();
});
afterEach(async () => {
  await h.close();
});

/** Requests by role, as each was sent (what the specialist read back after a decision, for instance). */
const seen: Record<Role, OfflineRequest[]> = { agent: [], returns: [], delivery: [] };

/** Queues replies per role; requests from specialists running side by side may come in any order. */
function scriptRoles(script: OfflineScript, queues: Partial<Record<Role, OfflineStep[]>>) {
  const total = Object.values(queues).reduce((n, q) => n + (q?.length ?? 0), 0);
  for (let i = 0; i < total; i++) {
    script.push({
      fn: (req) => {
        const role = roleOf(req);
        seen[role].push(structuredClone(req));
        const next = queues[role]?.shift();
        if (!next) throw new Error(`the script has no reply left for the ${role}`);
        return next;
      },
    });
  }
}

beforeEach(() => {
  for (const r of Object.keys(seen) as Role[]) seen[r] = [];
});

const dana = { customer: "dana@example.com" };
const refundTask = (order: string, cents: number) => ({
  task: `The parcel arrived damaged; refund ${cents / 100} dollars.`,
  order_number: order,
});

async function callsOf(runId: string) {
  return h.db.toolCall.findMany({ where: { runId }, orderBy: [{ createdAt: "asc" }, { position: "asc" }] });
}
async function handoffOf(toolUseId: string) {
  const call = await h.db.toolCall.findFirstOrThrow({ where: { toolUseId } });
  return h.db.handoff.findFirstOrThrow({ where: { toolCallId: call.id, kind: "APPROVAL" } });
}
const refunds = async () => (await h.effects()).filter((e) => e.toolName === "refund_order");
const replacements = async () => (await h.effects()).filter((e) => e.toolName === "create_replacement");

/** The tool_result blocks of a request's last message, by tool_use id. */
function lastResults(req: OfflineRequest): Record<string, { content: string; is_error?: boolean }> {
  const last = req.messages[req.messages.length - 1]!;
  const blocks = Array.isArray(last.content) ? last.content : [];
  return Object.fromEntries(
    blocks
      .filter((b): b is { type: "tool_result"; tool_use_id: string; content: string; is_error?: boolean } => b.type === "tool_result")
      .map((b) => [b.tool_use_id, { content: String(b.content), is_error: b.is_error }]),
  );
}

describe("a specialist's gated call parks the whole run", () => {
  it("one handoff says which specialist asked; after every process is rebuilt, approval runs the refund once and the report reaches the agent", async () => {
    scriptRoles(h.script, {
      agent: [toolUse(use("toolu_outer", "ask_returns_specialist", refundTask("A-1002", 25000)))],
      returns: [toolUse(use("toolu_inner", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }))],
    });
    const out = await h.say("My backpack from A-1002 arrived torn, I want my money back.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    expect(out.replies.map((r) => r.text).join(" ")).toMatch(/\$250\.00 refund for A-1002 is with our team/);

    const calls = await callsOf(out.runId!);
    expect(calls.map((c) => [c.toolUseId, c.name, c.status, c.scope])).toEqual([
      ["toolu_outer", "ask_returns_specialist", "APPROVED", null],
      ["v1:agent_as_tool:toolu_outer:toolu_inner", "refund_order", "PARKED", "v1:agent_as_tool:toolu_outer:"],
    ]);
    const handoffs = await h.db.handoff.findMany({ where: { runId: out.runId! } });
    expect(handoffs).toHaveLength(1);
    expect(handoffs[0]!.toolCallId).toBe(calls[1]!.id);
    expect(handoffs[0]!.payload).toMatchObject({
      specialist: "Returns & refunds specialist",
      toolName: "refund_order",
      amountCents: 25000,
    });
    const turn = await h.db.agentTurn.findFirstOrThrow({ where: { runId: out.runId! } });
    expect(turn).toMatchObject({ scope: "v1:agent_as_tool:toolu_outer:", specialist: "ask_returns_specialist", status: "waiting" });
    expect(await h.effects()).toHaveLength(0);

    // Every process restarted: a new model client and script; nothing is carried over but the database.
    const script = new OfflineScript();
    const model = createModelClient({ fetch: createOfflineFetch({ script }), maxRetries: 0, timeoutMs: 2000 });
    const rebuilt = h.newDeps("restarted-worker", model);
    scriptRoles(script, {
      returns: [endTurn("Refunded $250.00 on A-1002 after a reviewer approved it.")],
      agent: [endTurn("Good news: your refund of $250.00 for A-1002 was approved and processed.")],
    });
    const { outcome, advanced } = await resumeRun(
      rebuilt,
      { tenantId: h.acme.id, staffId: h.staff.raj.id },
      {
        handoffId: handoffs[0]!.id,
        decision: "approve",
      },
    );
    expect(outcome.kind).toBe("approved");
    expect(advanced?.phase).toBe("COMPLETED");

    expect(await refunds()).toHaveLength(1);
    // The specialist read its own call's result (under its own id) with the reviewer's decision in it.
    const after = lastResults(seen.returns[seen.returns.length - 1]!);
    expect(Object.keys(after)).toEqual(["toolu_inner"]);
    expect(JSON.parse(after.toolu_inner!.content)).toMatchObject({ review: { decision: "approved" } });
    // The agent read the specialist's report and what was done, by code.
    const outer = JSON.parse(lastResults(seen.agent[seen.agent.length - 1]!).toolu_outer!.content);
    expect(outer).toMatchObject({
      specialist: "Returns & refunds specialist",
      report: "Refunded $250.00 on A-1002 after a reviewer approved it.",
      actions: [{ tool: "refund_order", status: "succeeded", review: { decision: "approved" } }],
    });
    const settled = await callsOf(out.runId!);
    expect(settled.map((c) => [c.name, c.status, c.attempts])).toEqual([
      ["ask_returns_specialist", "SUCCEEDED", 1],
      ["refund_order", "SUCCEEDED", 1],
    ]);
    expect((await h.db.agentTurn.findFirstOrThrow({ where: { runId: out.runId! } })).status).toBe("done");
    // Every model request is recorded, the specialist's under its scope.
    const modelCalls = await h.db.modelCall.findMany({ where: { runId: out.runId! }, orderBy: { createdAt: "asc" } });
    expect(modelCalls.map((m) => m.scope)).toEqual([null, "v1:agent_as_tool:toolu_outer:", "v1:agent_as_tool:toolu_outer:", null]);
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(run.turnsUsed).toBe(4);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("a tool outside the specialist's own set is refused and never runs (the shop's allowlist alone is not enough)", async () => {
    scriptRoles(h.script, {
      agent: [
        toolUse(use("toolu_outer", "ask_returns_specialist", refundTask("A-1001", 4250))),
        endTurn("The specialist could not cancel that order."),
      ],
      returns: [
        toolUse(use("toolu_c", "cancel_order", { order_number: "A-1001", reason: "changed mind" })),
        endTurn("I cannot cancel orders."),
      ],
    });
    const out = await h.say("Cancel A-1001 please.", dana);
    expect(out.phase).toBe("COMPLETED");
    const inner = (await callsOf(out.runId!)).find((c) => c.name === "cancel_order")!;
    expect(inner).toMatchObject({ status: "DENIED", gateReason: expect.stringMatching(/not a tool of the returns/) });
    expect(await h.effects()).toHaveLength(0);
    expect(await h.db.handoff.count({ where: { runId: out.runId! } })).toBe(0);
  });
});

describe("ids from two models (seed 003: answers routed by namespaced ids, never by prefixes)", () => {
  // Without percent-encoding, "a" + "b:c" and "a:b" + "c" are the same id: one specialist would get the other's answer.
  const twoParked = () => {
    scriptRoles(h.script, {
      agent: [
        toolUse(
          use("a", "ask_returns_specialist", refundTask("A-1002", 25000)),
          use("a:b", "ask_delivery_specialist", { task: "The parcel never arrived; send a replacement.", order_number: "A-1003" }),
        ),
      ],
      returns: [toolUse(use("b:c", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }))],
      delivery: [toolUse(use("c", "create_replacement", { order_number: "A-1003", reason: "lost in transit" }))],
    });
    return h.say("A-1002 came broken and A-1003 never arrived.", dana);
  };

  it("two specialists parked in one turn get distinct namespaced ids and one handoff each", async () => {
    const out = await twoParked();
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const inner = (await callsOf(out.runId!)).filter((c) => c.scope);
    expect(inner.map((c) => [c.name, c.toolUseId]).sort()).toEqual([
      ["create_replacement", "v1:agent_as_tool:a%3Ab:c"],
      ["refund_order", "v1:agent_as_tool:a:b:c"],
    ]);
    const payloads = (await h.db.handoff.findMany({ where: { runId: out.runId! } })).map(
      (x) => x.payload as { specialist: string; toolName: string },
    );
    expect(payloads.map((p) => [p.toolName, p.specialist]).sort()).toEqual([
      ["create_replacement", "Delivery problems specialist"],
      ["refund_order", "Returns & refunds specialist"],
    ]);
  });

  it.each([
    ["the refund first, then the replacement", ["v1:agent_as_tool:a:b:c", "v1:agent_as_tool:a%3Ab:c"]],
    ["the replacement first, then the refund", ["v1:agent_as_tool:a%3Ab:c", "v1:agent_as_tool:a:b:c"]],
  ])("answered separately (%s): each answer reaches its own specialist, each action runs once", async (_label, order) => {
    const out = await twoParked();
    scriptRoles(h.script, {
      returns: [endTurn("Refunded $250.00 on A-1002.")],
      delivery: [endTurn("A replacement for A-1003 is on its way.")],
      agent: [endTurn("Your refund of $250.00 for A-1002 is done and a replacement for A-1003 is on its way.")],
    });
    const first = await h.decide((await handoffOf(order[0]!)).id, "raj@acme.test", "approve");
    expect(first.outcome).toBe("approved");
    // The other still waits: the run does not move, nothing runs.
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("WAITING_FOR_APPROVAL");
    expect(await h.effects()).toHaveLength(0);
    await h.decide((await handoffOf(order[1]!)).id, "raj@acme.test", "approve");
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");

    expect((await refunds()).map((e) => (e.outcome as { order_number?: string }).order_number ?? e.idempotencyKey)).toHaveLength(1);
    expect(await replacements()).toHaveLength(1);
    const refund = await h.db.refund.findFirstOrThrow();
    expect(refund.amountCents).toBe(25000);
    // Each specialist read exactly its own call's result, under its own id.
    expect(Object.keys(lastResults(seen.returns[seen.returns.length - 1]!))).toEqual(["b:c"]);
    expect(Object.keys(lastResults(seen.delivery[seen.delivery.length - 1]!))).toEqual(["c"]);
    expect(JSON.parse(lastResults(seen.returns.at(-1)!)["b:c"]!.content)).toMatchObject({ amount_cents: 25000 });
    expect(JSON.parse(lastResults(seen.delivery.at(-1)!).c!.content)).toMatchObject({ order_number: "A-1003" });
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("a denial reaches only the specialist it was meant for", async () => {
    const out = await twoParked();
    scriptRoles(h.script, {
      returns: [endTurn("The refund on A-1002 was denied by a reviewer.")],
      delivery: [endTurn("A replacement for A-1003 is on its way.")],
      agent: [endTurn("The refund for A-1002 was declined, but a replacement for A-1003 is on its way.")],
    });
    await h.decide((await handoffOf("v1:agent_as_tool:a:b:c")).id, "raj@acme.test", "deny", { reason: "Damage not shown in photos" });
    await h.decide((await handoffOf("v1:agent_as_tool:a%3Ab:c")).id, "raj@acme.test", "approve");
    expect(await refunds()).toHaveLength(0);
    expect(await replacements()).toHaveLength(1);
    const denied = lastResults(seen.returns.at(-1)!)["b:c"]!;
    expect(denied.is_error).toBe(true);
    expect(JSON.parse(denied.content)).toMatchObject({ review: { decision: "denied", reason: "Damage not shown in photos" } });
    expect(lastResults(seen.delivery.at(-1)!).c!.is_error).toBeUndefined();
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
  });

  it("an outer id that is the marker's first word ('v1') is an ordinary id; one that opens with the marker is refused as malformed", async () => {
    scriptRoles(h.script, {
      agent: [toolUse(use("v1", "ask_returns_specialist", refundTask("A-1002", 25000)))],
      returns: [toolUse(use("v1", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }))],
    });
    const out = await h.say("Refund A-1002 please, it arrived damaged.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    expect((await callsOf(out.runId!)).map((c) => c.toolUseId)).toEqual(["v1", "v1:agent_as_tool:v1:v1"]);

    scriptRoles(h.script, { agent: [toolUse(use("v1:agent_as_tool:x:y", "lookup_order", { order_number: "A-1001" }))] });
    const posing = await h.say("Where is A-1001?", dana);
    expect(posing.phase).toBe("ESCALATED");
    expect(await h.db.toolCall.count({ where: { runId: posing.runId! } })).toBe(0);
    const reason = (await h.db.handoff.findFirstOrThrow({ where: { runId: posing.runId!, kind: "ESCALATION" } })).payload as {
      reason: string;
    };
    expect(reason.reason).toMatch(/reserved prefix/);
  });
});

describe("a specialist's malformed reply never reaches its next request", () => {
  // A specialist's messages go to the provider as the turn keeps them: what it would refuse must not be kept.
  const lookupIn = (id: string, order: string) => use(id, "lookup_order", { order_number: order });
  const outer = () => toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Where is the parcel?", order_number: "A-1001" }));

  it("a blank text block beside its tool call is left out; the call runs and the specialist reports", async () => {
    scriptRoles(h.script, {
      agent: [outer(), endTurn("A-1001 was delivered.")],
      returns: [{ reply: { content: [text(" \n"), lookupIn("r1", "A-1001")], stop_reason: "tool_use" } }, endTurn("Delivered.")],
    });
    const out = await h.say("Where is A-1001?", dana);
    expect(out.phase).toBe("COMPLETED");
    expect(seen.returns[1]!.messages[1]).toMatchObject({ role: "assistant", content: [{ type: "tool_use", id: "r1" }] });
    expect(await h.badRequests(out.conversationId)).toEqual([]);
  });

  it.each<[string, OfflineStep[], string[]]>([
    ["reuses a tool_use id of its own earlier turn", [toolUse(lookupIn("r1", "A-1001")), toolUse(lookupIn("r1", "A-1002"))], ["A-1001"]],
    ["pauses its turn with a tool call in it", [{ reply: { content: [lookupIn("r1", "A-1001")], stop_reason: "pause_turn" } }], []],
  ])("one that %s fails as a tool error the agent can explain; the refused call never runs", async (_label, returns, looked) => {
    scriptRoles(h.script, { agent: [outer(), endTurn("The specialist could not check A-1001.")], returns });
    const out = await h.say("Where is A-1001?", dana);
    expect(out.phase).toBe("COMPLETED");
    const calls = await callsOf(out.runId!);
    expect(calls.find((c) => c.toolUseId === "toolu_outer")).toMatchObject({ status: "FAILED", isError: true });
    expect(calls.filter((c) => c.scope).map((c) => (c.input as { order_number: string }).order_number)).toEqual(looked);
    expect(await h.badRequests(out.conversationId)).toEqual([]);
  });
});

describe("a specialist that interrupts twice", () => {
  it("the first answer is applied once and never asked for or run again", async () => {
    scriptRoles(h.script, {
      agent: [toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Refund A-1002 and replace A-1003.", order_number: "A-1002" }))],
      returns: [toolUse(use("r1", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }))],
    });
    const out = await h.say("Refund A-1002 and replace A-1003.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const firstHandoff = await handoffOf("v1:agent_as_tool:toolu_outer:r1");

    scriptRoles(h.script, { returns: [toolUse(use("r2", "create_replacement", { order_number: "A-1003", reason: "lost in transit" }))] });
    await h.decide(firstHandoff.id, "raj@acme.test", "approve");
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("WAITING_FOR_APPROVAL");
    expect(await refunds()).toHaveLength(1);
    const secondHandoff = await handoffOf("v1:agent_as_tool:toolu_outer:r2");
    expect(await h.db.handoff.count({ where: { runId: out.runId!, kind: "APPROVAL" } })).toBe(2);

    scriptRoles(h.script, {
      returns: [endTurn("Refunded $250.00 on A-1002; a replacement for A-1003 is on its way.")],
      agent: [endTurn("Your refund of $250.00 for A-1002 is done, and a replacement for A-1003 is on its way.")],
    });
    await h.decide(secondHandoff.id, "raj@acme.test", "approve");
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
    expect(await refunds()).toHaveLength(1);
    expect(await replacements()).toHaveLength(1);
    const inner = (await callsOf(out.runId!)).filter((c) => c.scope);
    expect(inner.map((c) => [c.name, c.status, c.attempts])).toEqual([
      ["refund_order", "SUCCEEDED", 1],
      ["create_replacement", "SUCCEEDED", 1],
    ]);
    // Still one handoff per call; the first was never raised again.
    expect(await h.db.handoff.count({ where: { runId: out.runId!, kind: "APPROVAL" } })).toBe(2);
    expect((await h.db.handoff.findUniqueOrThrow({ where: { id: firstHandoff.id } })).status).toBe("APPROVED");
    // The specialist's last request carried the first result once and the second once, each under its own id.
    const last = seen.returns.at(-1)!;
    const ids = last.messages.flatMap((m) =>
      Array.isArray(m.content)
        ? m.content.filter((b) => b.type === "tool_result").map((b) => (b as { tool_use_id: string }).tool_use_id)
        : [],
    );
    expect(ids).toEqual(["r1", "r2"]);
  });
});

describe("a stored specialist turn that cannot be read back (seed 003: never destroy the approval, never claim)", () => {
  async function parkedThenBroken(breakIt: (runId: string) => Promise<unknown>) {
    scriptRoles(h.script, {
      agent: [toolUse(use("toolu_outer", "ask_returns_specialist", refundTask("A-1002", 25000)))],
      returns: [toolUse(use("toolu_inner", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }))],
    });
    const out = await h.say("Refund A-1002, it arrived damaged.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    await breakIt(out.runId!);
    const handoff = await handoffOf("v1:agent_as_tool:toolu_outer:toolu_inner");
    scriptRoles(h.script, {
      agent: [endTurn("I'm sorry — the refund could not be completed yet. A person from our team will follow up here.")],
    });
    const { outcome } = await h.decide(handoff.id, "raj@acme.test", "approve");
    expect(outcome).toBe("approved");
    return { out, handoff };
  }

  it.each([
    ["its messages are corrupt", (runId: string) => h.db.agentTurn.updateMany({ where: { runId }, data: { messages: { not: "a turn" } } })],
    ["its row is gone", (runId: string) => h.db.agentTurn.deleteMany({ where: { runId } })],
  ])("when %s: the approval is kept, nothing runs, the agent is told it did NOT run, a person follows up", async (_label, breakIt) => {
    const { out, handoff } = await parkedThenBroken(breakIt);
    expect(await h.effects()).toHaveLength(0);
    // The reviewer's approval stands, on the handoff and on the call (never re-asked, never reset to a fresh start).
    expect((await h.db.handoff.findUniqueOrThrow({ where: { id: handoff.id } })).status).toBe("APPROVED");
    const inner = await h.db.toolCall.findFirstOrThrow({ where: { toolUseId: "v1:agent_as_tool:toolu_outer:toolu_inner" } });
    expect(inner.status).toBe("APPROVED");
    expect(inner.review).toMatchObject({ decision: "approved" });
    expect(seen.returns).toHaveLength(1); // the specialist was not started over
    const result = lastResults(seen.agent.at(-1)!).toolu_outer!;
    expect(result.is_error).toBe(true);
    expect(JSON.parse(result.content).message).toMatch(/refund_order of \$250\.00 on A-1002\) did NOT run.*Do not tell the customer/);
    const escalation = await h.db.handoff.findFirstOrThrow({ where: { runId: out.runId!, kind: "ESCALATION" } });
    expect(escalation.payload).toMatchObject({ recommendedAction: expect.stringMatching(/approval is kept/) });
    const shown = await h.db.message.findMany({ where: { conversationId: out.conversationId, shownToCustomer: true } });
    expect(shown.map((m) => m.displayText).join(" ")).not.toMatch(/refunded|processed/i);
  });
});

describe("racing and repeated resumes", () => {
  async function parked() {
    scriptRoles(h.script, {
      agent: [toolUse(use("toolu_outer", "ask_returns_specialist", refundTask("A-1002", 25000)))],
      returns: [toolUse(use("toolu_inner", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }))],
    });
    const out = await h.say("Refund A-1002, it arrived damaged.", dana);
    return { out, handoff: await handoffOf("v1:agent_as_tool:toolu_outer:toolu_inner") };
  }

  it("a double resume (two clicks at once) runs the refund once", async () => {
    const { out, handoff } = await parked();
    scriptRoles(h.script, {
      returns: [endTurn("Refunded $250.00 on A-1002.")],
      agent: [endTurn("Your refund of $250.00 for A-1002 is done.")],
    });
    const decisions = await Promise.allSettled([
      h.decide(handoff.id, "raj@acme.test", "approve", { version: handoff.version }),
      h.decide(handoff.id, "raj@acme.test", "approve", { version: handoff.version }),
    ]);
    expect(decisions.filter((d) => d.status === "fulfilled")).toHaveLength(1);
    const refused = decisions.find((d) => d.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(AppError);
    expect(await refunds()).toHaveLength(1);
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
  });

  it("two workers racing to continue the approved run: one refund, one report", async () => {
    const { out, handoff } = await parked();
    await decideHandoff(h.db, { tenantId: h.acme.id, staffId: h.staff.raj.id }, { handoffId: handoff.id, decision: "approve" });
    scriptRoles(h.script, {
      returns: [endTurn("Refunded $250.00 on A-1002.")],
      agent: [endTurn("Your refund of $250.00 for A-1002 is done.")],
    });
    await Promise.all([runWorkerOnce(h.newDeps("w1")), runWorkerOnce(h.newDeps("w2"))]);
    expect(await refunds()).toHaveLength(1);
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
    expect(seen.returns).toHaveLength(2);
  });
});

describe("nesting two levels deep", () => {
  it("delivery → returns: the parked refund says both specialists; approval runs it once and both reports travel up", async () => {
    scriptRoles(h.script, {
      agent: [
        toolUse(
          use("d1", "ask_delivery_specialist", {
            task: "A-1002 was crushed in transit; the customer wants their money.",
            order_number: "A-1002",
          }),
        ),
      ],
      delivery: [toolUse(use("r1", "ask_returns_specialist", refundTask("A-1002", 25000)))],
      returns: [toolUse(use("x1", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "crushed in transit" }))],
    });
    const out = await h.say("My A-1002 parcel was crushed by the courier, I want my money.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const middle = "v1:agent_as_tool:d1:r1";
    const innermost = `v1:agent_as_tool:${encodeURIComponent(middle)}:x1`;
    const calls = await callsOf(out.runId!);
    expect(calls.map((c) => [c.toolUseId, c.status])).toEqual([
      ["d1", "APPROVED"],
      [middle, "APPROVED"],
      [innermost, "PARKED"],
    ]);
    const handoff = await handoffOf(innermost);
    expect(handoff.payload).toMatchObject({ specialist: "Delivery problems specialist → Returns & refunds specialist" });
    const turns = await h.db.agentTurn.findMany({ where: { runId: out.runId! }, orderBy: { createdAt: "asc" } });
    expect(turns.map((t) => [t.scope, t.status])).toEqual([
      ["v1:agent_as_tool:d1:", "waiting"],
      [`v1:agent_as_tool:${encodeURIComponent(middle)}:`, "waiting"],
    ]);

    scriptRoles(h.script, {
      returns: [endTurn("Refunded $250.00 on A-1002.")],
      delivery: [endTurn("The returns specialist refunded $250.00 on A-1002.")],
      agent: [endTurn("Your refund of $250.00 for A-1002 is done.")],
    });
    await h.decide(handoff.id, "raj@acme.test", "approve");
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
    expect(await refunds()).toHaveLength(1);
    expect((await callsOf(out.runId!)).map((c) => c.status)).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
    const toDelivery = JSON.parse(lastResults(seen.delivery.at(-1)!).r1!.content);
    expect(toDelivery).toMatchObject({ report: "Refunded $250.00 on A-1002.", actions: [{ tool: "refund_order", status: "succeeded" }] });
    const toAgent = JSON.parse(lastResults(seen.agent.at(-1)!).d1!.content);
    expect(toAgent.actions).toEqual([expect.objectContaining({ tool: "ask_returns_specialist", status: "succeeded" })]);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });
});

describe("the policy holds across the agent and its specialists", () => {
  it("a refund split between the agent and a specialist is judged on the total", async () => {
    scriptRoles(h.script, {
      agent: [
        toolUse(use("own", "refund_order", { order_number: "A-1004", amount_cents: 9000, reason: "tent pole bent" })),
        toolUse(use("spec", "ask_returns_specialist", refundTask("A-1004", 9000))),
      ],
      returns: [toolUse(use("more", "refund_order", { order_number: "A-1004", amount_cents: 9000, reason: "tent pole bent" }))],
    });
    const out = await h.say("Refund $90 on A-1004, and another $90 through your returns team.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    expect(await refunds()).toHaveLength(1); // the first $90 was automatic; the second is judged on $180
    const parked = await h.db.toolCall.findFirstOrThrow({ where: { toolUseId: "v1:agent_as_tool:spec:more" } });
    expect(parked.status).toBe("PARKED");
  });
});
