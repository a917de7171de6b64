// Specialists run as tools (DESIGN §2.5), at the edges: a repeat across their turns, totals across specialists and the
// agent, expiry, malformed replies, an edited approval judged again where it acts.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Harness } from "../runtime-harness";
import { endTurn, harnessWithSpecialists, type Role, roleOf, text, toolUse, use } from "./specialist-script";
import type { OfflineRequest, OfflineStep } from "@/lib/model/offline/types";
import { expireDueApprovals } from "@/lib/runtime/resume";

let h: Harness;
beforeEach(async () => {
  h = await harnessWithSpecialists();
});
afterEach(async () => {
  await h.close();
});

const seen: Record<Role, OfflineRequest[]> = { agent: [], returns: [], delivery: [] };
beforeEach(() => {
  for (const r of Object.keys(seen) as Role[]) seen[r] = [];
});
function scriptRoles(queues: Partial<Record<Role, OfflineStep[]>>) {
  const total = Object.values(queues).reduce((n, q) => n + (q?.length ?? 0), 0);
  for (let i = 0; i < total; i++) {
    h.script.push({
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
function lastResults(req: OfflineRequest): Record<string, { content: string; is_error?: boolean }> {
  const last = req.messages[req.messages.length - 1]!;
  const blocks = Array.isArray(last.content) ? last.content : [];
  return Object.fromEntries(
    blocks
      .filter((b): b is { type: "tool_result"; tool_use_id: string; content: string; is_error?: boolean } => b.type === "tool_result")
      .map((b) => [b.tool_use_id, { content: String(b.content), is_error: b.is_error }]),
  );
}
const dana = { customer: "dana@example.com" };
const effectsOf = async (tool: string) => (await h.effects()).filter((e) => e.toolName === tool);

describe("identical-call detection holds inside a specialist", () => {
  it("a specialist that repeats the same refund call in its next turn gets the identical-call refusal (one refund, not two)", async () => {
    const refund = { order_number: "A-1001", amount_cents: 2000, reason: "zip broke" };
    scriptRoles({
      agent: [
        toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Refund 20 dollars, the zip broke.", order_number: "A-1001" })),
        endTurn("The specialist handled it."),
      ],
      returns: [toolUse(use("r1", "refund_order", refund)), toolUse(use("r2", "refund_order", refund)), endTurn("Refunded $20.00.")],
    });
    const out = await h.say("A-1001's zip broke, refund me $20.", dana);
    expect(out.phase).toBe("COMPLETED");
    const inner = await h.db.toolCall.findMany({ where: { runId: out.runId!, name: "refund_order" }, orderBy: { createdAt: "asc" } });
    const what = JSON.stringify(inner.map((c) => [c.toolUseId, c.status, c.gateReason]));
    // The run's own agent would be refused the second, identical call ("identical_call" gate): so must the specialist.
    expect(inner[1]?.status, what).toBe("DENIED");
    expect(inner[1]?.gateReason ?? "", what).toMatch(/identical_call/);
    expect(await effectsOf("refund_order"), what).toHaveLength(1);
  });

  it("control: the run's own agent repeating the same refund call is refused by identical_call", async () => {
    const refund = { order_number: "A-1001", amount_cents: 2000, reason: "zip broke" };
    scriptRoles({
      agent: [toolUse(use("a1", "refund_order", refund)), toolUse(use("a2", "refund_order", refund)), endTurn("Refunded $20.00.")],
    });
    const out = await h.say("A-1001's zip broke, refund me $20.", dana);
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId!, name: "refund_order" }, orderBy: { createdAt: "asc" } });
    expect(calls.map((c) => c.status)).toEqual(["SUCCEEDED", "DENIED"]);
    expect(await effectsOf("refund_order")).toHaveLength(1);
  });
});

describe("limits hold across the agent and its specialists in one turn", () => {
  it("the agent's own $90 refund and a specialist's $90 refund on A-1004 in the SAME reply: at most $100 automatic", async () => {
    scriptRoles({
      agent: [
        toolUse(
          use("own", "refund_order", { order_number: "A-1004", amount_cents: 9000, reason: "tent pole bent" }),
          use("spec", "ask_returns_specialist", { task: "Refund another 90 dollars.", order_number: "A-1004" }),
        ),
        endTurn("Done."),
        endTurn("Done."),
      ],
      returns: [
        toolUse(use("more", "refund_order", { order_number: "A-1004", amount_cents: 9000, reason: "tent pole bent" })),
        endTurn("ok"),
      ],
    });
    await h.say("Refund $90 on A-1004, and another $90 through your returns team.", dana);
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1004" } });
    expect(order.refundedCents).toBeLessThanOrEqual(10000);
  });

  it("two specialists in one reply, $90 each on two different orders: the $150 per-customer automatic limit holds", async () => {
    let agentTurns = 0;
    for (let i = 0; i < 10; i++) {
      h.script.push({
        fn: (req) => {
          const role = roleOf(req);
          if (role !== "agent") {
            const last = req.messages[req.messages.length - 1]!;
            if (Array.isArray(last.content) && last.content.some((b) => b.type === "tool_result")) return endTurn("Done.");
            const order = JSON.stringify(req.messages[0]).includes("A-1002") ? "A-1002" : "A-1004";
            return toolUse(use("r", "refund_order", { order_number: order, amount_cents: 9000, reason: "damaged" }));
          }
          agentTurns++;
          if (agentTurns === 1)
            return toolUse(
              use("s1", "ask_returns_specialist", { task: "Refund 90 dollars.", order_number: "A-1002" }),
              use("s2", "ask_returns_specialist", { task: "Refund 90 dollars.", order_number: "A-1004" }),
            );
          return endTurn("Done.");
        },
      });
    }
    const out = await h.say("A-1002 and A-1004 both arrived damaged, $90 back on each please.", dana);
    const refunded = (await h.db.order.findMany({ where: { number: { in: ["A-1002", "A-1004"] } } })).reduce(
      (n, o) => n + o.refundedCents,
      0,
    );
    expect(refunded, String(out.phase)).toBeLessThanOrEqual(15000);
  });
});

describe("an inner approval that expires", () => {
  it("reaches the specialist as expired (never as a denial), nothing runs, the run finishes", async () => {
    scriptRoles({
      agent: [toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Refund 250 dollars.", order_number: "A-1002" }))],
      returns: [toolUse(use("toolu_inner", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }))],
    });
    const out = await h.say("Refund A-1002, it arrived damaged.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    scriptRoles({
      returns: [endTurn("The refund request expired without a decision; nothing was refunded.")],
      agent: [endTurn("Your refund request expired before our team could review it; nothing was refunded yet. A person will follow up.")],
    });
    const expired = await expireDueApprovals(h.deps, new Date(Date.now() + 48 * 3600_000));
    expect(expired).toHaveLength(1);
    // a worker continues the run
    const { runWorkerOnce } = await import("@/lib/runtime/worker");
    for (let i = 0; i < 3; i++) await runWorkerOnce(h.newDeps(`w${i}`));
    expect(await effectsOf("refund_order")).toHaveLength(0);
    const inner = lastResults(seen.returns.at(-1)!).toolu_inner!;
    expect(inner.is_error).toBe(true);
    expect(inner.content).toMatch(/expired/i);
    expect(inner.content).not.toMatch(/denied/i);
    const outer = JSON.parse(lastResults(seen.agent.at(-1)!).toolu_outer!.content);
    expect(JSON.stringify(outer)).toMatch(/expired/);
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });
});

describe("a specialist whose reply is malformed after it already acted", () => {
  it.each<[string, OfflineStep]>([
    ["max_tokens", { reply: { content: [text("Refunded $20.0")], stop_reason: "max_tokens" } }],
    ["an unknown stop_reason", { reply: { content: [text("Refunded.")], stop_reason: "weird_reason" as "end_turn" } }],
    ["an empty end_turn", { reply: { content: [], stop_reason: "end_turn" } }],
  ])(
    "%s: the outer result is an error that says what WAS done (by code); one refund; the outer tool_use has one result",
    async (_l, bad) => {
      scriptRoles({
        agent: [
          toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Refund 20 dollars.", order_number: "A-1001" })),
          endTurn("I refunded $20.00 on A-1001."),
        ],
        returns: [toolUse(use("r1", "refund_order", { order_number: "A-1001", amount_cents: 2000, reason: "zip broke" })), bad],
      });
      const out = await h.say("A-1001's zip broke, refund me $20.", dana);
      expect(out.phase).toBe("COMPLETED");
      expect(await effectsOf("refund_order")).toHaveLength(1);
      const outer = lastResults(seen.agent.at(-1)!).toolu_outer!;
      expect(outer.is_error).toBe(true);
      expect(outer.content).toMatch(/Done so far: refund_order of \$20\.00 on A-1001/);
      expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
    },
  );
});

describe("a specialist after a reviewer's decision", () => {
  it("a denied refund re-proposed at once by the specialist (same arguments) is refused, not put to a reviewer again", async () => {
    const refund = { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" };
    scriptRoles({
      agent: [toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Refund 250 dollars.", order_number: "A-1002" }))],
      returns: [toolUse(use("r1", "refund_order", refund))],
    });
    const out = await h.say("Refund A-1002, it arrived damaged.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const first = await h.db.handoff.findFirstOrThrow({ where: { runId: out.runId!, kind: "APPROVAL" } });
    scriptRoles({
      returns: [toolUse(use("r2", "refund_order", refund)), endTurn("The refund was denied.")],
      agent: [endTurn("Your refund was declined by our team.")],
    });
    await h.decide(first.id, "raj@acme.test", "deny", { reason: "No damage shown in the photos" });
    const approvals = await h.db.handoff.findMany({ where: { runId: out.runId!, kind: "APPROVAL" } });
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    const what = JSON.stringify({ phase: run.phase, approvals: approvals.map((a) => a.status) });
    // The agent itself repeating the call would be refused by identical_call; the specialist re-asks the reviewer.
    expect(approvals, what).toHaveLength(1);
    expect(run.phase, what).toBe("COMPLETED");
  });

  it("an edited inner refund: the refund runs on the edited amount and the specialist and agent are told the edited terms", async () => {
    scriptRoles({
      agent: [toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Refund 250 dollars.", order_number: "A-1002" }))],
      returns: [toolUse(use("r1", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }))],
    });
    const out = await h.say("Refund A-1002, it arrived damaged.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const handoff = await h.db.handoff.findFirstOrThrow({ where: { runId: out.runId!, kind: "APPROVAL" } });
    scriptRoles({
      returns: [endTurn("A reviewer refunded $150.00 instead of $250.00.")],
      agent: [endTurn("A reviewer approved a refund of $150.00 for A-1002.")],
    });
    await h.decide(handoff.id, "raj@acme.test", "edit", {
      input: { order_number: "A-1002", amount_cents: 15000, reason: "partial: strap only" },
      reason: "only the strap",
    });
    const refunds = await h.db.refund.findMany();
    expect(refunds.map((r) => r.amountCents)).toEqual([15000]);
    const inner = JSON.parse(lastResults(seen.returns.at(-1)!).r1!.content);
    expect(inner).toMatchObject({ review: { decision: "edited", executed_input: { amount_cents: 15000 } } });
    const outer = JSON.parse(lastResults(seen.agent.at(-1)!).toolu_outer!.content);
    expect(outer.actions).toEqual([
      expect.objectContaining({ tool: "refund_order", input: expect.objectContaining({ amount_cents: 15000 }) }),
    ]);
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
  });

  it("the supervisor's run view shows the specialist's turn, its calls and its model calls", async () => {
    scriptRoles({
      agent: [
        toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Refund 20 dollars.", order_number: "A-1001" })),
        endTurn("Refunded $20.00 on A-1001."),
      ],
      returns: [
        toolUse(use("r1", "refund_order", { order_number: "A-1001", amount_cents: 2000, reason: "zip" })),
        endTurn("Refunded $20.00."),
      ],
    });
    const out = await h.say("A-1001's zip broke, refund me $20.", dana);
    const detail = (await h.runDetail(out.runId!)) as unknown as {
      specialists: Array<{ status: string; messages: unknown[]; calls: Array<{ name: string }>; modelCalls: unknown[] }>;
    };
    expect(detail.specialists).toHaveLength(1);
    const node = detail.specialists[0]!;
    expect(node.status).toBe("done");
    expect(node.messages).toHaveLength(4);
    expect(node.calls.map((c) => c.name)).toEqual(["refund_order"]);
    expect(node.modelCalls).toHaveLength(2);
  });
});

describe("controls and the customer typing while a specialist waits", () => {
  it("control: the agent re-proposing its own denied refund with the same arguments is refused by identical_call (no second approval)", async () => {
    const refund = { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" };
    scriptRoles({ agent: [toolUse(use("a1", "refund_order", refund))] });
    const out = await h.say("Refund A-1002, it arrived damaged.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const first = await h.db.handoff.findFirstOrThrow({ where: { runId: out.runId!, kind: "APPROVAL" } });
    scriptRoles({ agent: [toolUse(use("a2", "refund_order", refund)), endTurn("Your refund was declined by our team.")] });
    await h.decide(first.id, "raj@acme.test", "deny", { reason: "No damage shown in the photos" });
    expect(await h.db.handoff.count({ where: { runId: out.runId!, kind: "APPROVAL" } })).toBe(1);
    const second = await h.db.toolCall.findFirstOrThrow({ where: { toolUseId: "a2" } });
    expect(second.gateReason).toMatch(/identical_call/);
  });

  it("customer text sent while a specialist's refund waits: after approval the outer tool_use gets exactly one result, first", async () => {
    scriptRoles({
      agent: [toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Refund 250 dollars.", order_number: "A-1002" }))],
      returns: [toolUse(use("r1", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }))],
    });
    const out = await h.say("Refund A-1002, it arrived damaged.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    await h.say("Any news? Also is A-1001 delivered?", { ...dana, conversationId: out.conversationId });
    const handoff = await h.db.handoff.findFirstOrThrow({ where: { runId: out.runId!, kind: "APPROVAL" } });
    scriptRoles({
      returns: [endTurn("Refunded $250.00 on A-1002.")],
      agent: [endTurn("Your refund of $250.00 for A-1002 is done; A-1001 was delivered."), endTurn("ok"), endTurn("ok")],
    });
    await h.decide(handoff.id, "raj@acme.test", "approve");
    expect(await effectsOf("refund_order")).toHaveLength(1);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
    expect(await h.badRequests(out.conversationId)).toEqual([]);
    const req = seen.agent.find((r) => JSON.stringify(r.messages).includes('"tool_use_id":"toolu_outer"'))!;
    const ids = req.messages.flatMap((m) =>
      Array.isArray(m.content)
        ? m.content.filter((b) => b.type === "tool_result").map((b) => (b as { tool_use_id: string }).tool_use_id)
        : [],
    );
    expect(ids.filter((i) => i === "toolu_outer")).toHaveLength(1);
  });
});

describe("an edited inner approval judged again where it acts", () => {
  async function editedThenOthersRefunded(viaSpecialist: boolean) {
    const proposed = { order_number: "A-1003", amount_cents: 15000, reason: "lost in transit" };
    if (viaSpecialist)
      scriptRoles({
        agent: [toolUse(use("toolu_outer", "ask_returns_specialist", { task: "Refund 150 dollars.", order_number: "A-1003" }))],
        returns: [toolUse(use("r1", "refund_order", proposed))],
      });
    else scriptRoles({ agent: [toolUse(use("r1", "refund_order", proposed))] });
    const out = await h.say("A-1003 never arrived, refund me.", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const handoff = await h.db.handoff.findFirstOrThrow({ where: { runId: out.runId!, kind: "APPROVAL" } });
    const { decideHandoff } = await import("@/lib/runtime/resume");
    // The reviewer raises it to $250 (within their authority); the run is continued later by a worker.
    await decideHandoff(
      h.db,
      { tenantId: h.acme.id, staffId: h.staff.raj.id },
      { handoffId: handoff.id, decision: "edit", editedInput: { ...proposed, amount_cents: 25000 }, reason: "the jacket too" },
    );
    // Meanwhile $300 was refunded on A-1003 elsewhere: the edited $250 now passes the $500 ceiling ($550).
    await h.db.order.update({
      where: { tenantId_number: { tenantId: h.acme.id, number: "A-1003" } } as never,
      data: { refundedCents: 30000 },
    });
    for (let i = 0; i < 12; i++) h.script.push(endTurn("A person will follow up on your refund."));
    const { runWorkerOnce } = await import("@/lib/runtime/worker");
    for (let i = 0; i < 4; i++) {
      await runWorkerOnce(h.newDeps(`w${i}`));
      await new Promise((r) => setTimeout(r, 50));
    }
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId!, name: "refund_order" } });
    const approvals = await h.db.handoff.findMany({ where: { runId: out.runId! }, orderBy: { createdAt: "asc" } });
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    return { out, calls, approvals, run, handoff };
  }

  it("control (the agent's own call): the edited $250 is judged on the ceiling, refused and escalated; never asked again", async () => {
    const { calls, approvals, run } = await editedThenOthersRefunded(false);
    const what = JSON.stringify({
      phase: run.phase,
      calls: calls.map((c) => [c.status, c.gateReason]),
      handoffs: approvals.map((a) => [a.kind, a.status]),
    });
    expect(
      approvals.filter((a) => a.kind === "APPROVAL"),
      what,
    ).toHaveLength(1);
    expect(await effectsOf("refund_order"), what).toHaveLength(0);
  });

  it("inside a specialist: the edited $250 is judged (not the model's $150), refused above the ceiling; no second approval for the same call", async () => {
    const { calls, approvals, run } = await editedThenOthersRefunded(true);
    const what = JSON.stringify({
      phase: run.phase,
      calls: calls.map((c) => [c.status, c.gateReason, c.effectiveInput]),
      handoffs: approvals.map((a) => [a.kind, a.status, (a.payload as { proposedInput?: unknown }).proposedInput]),
    });
    expect(
      approvals.filter((a) => a.kind === "APPROVAL"),
      what,
    ).toHaveLength(1);
    expect(calls[0]!.status, what).toBe("DENIED");
    expect(await effectsOf("refund_order"), what).toHaveLength(0);
  });
});
