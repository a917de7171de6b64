// The automatic bands are on totals, and a customer with two conversations open at once (two tabs, a phone and a
// laptop) must not get past them by asking in both at the same moment. The gates read the totals before the call is
// saved, so both requests can be judged on a world where the other has not happened yet; an automatic call is
// therefore judged again where it acts — in its effect's transaction, under the customer's lock, on what is done
// (lib/runtime/judged-again). These tests hold both gate reads until both have happened, so the race is certain.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { SPECIALISTS } from "@/lib/agents/specialists";
import { apiHandoff } from "@/lib/api/endpoints/handoffs";
import { decidedSummary, decisionInWords } from "@/lib/console/decision-words";
import { DEFAULT_QUEUE_FILTER } from "@/lib/console/filters";
import { conversationDetail, queueHandoffs } from "@/lib/console/queries";
import { runFilterSchema, runReview, searchRuns } from "@/lib/console/runs";
import { runWorkerOnce } from "@/lib/runtime/worker";
import { getTool } from "@/lib/tools/registry";
import type { ToolDefinition } from "@/lib/tools/types";
import type { OfflineRequest, OfflineStep } from "@/lib/model/offline/types";
import { answersTools, isSpecialistRequest } from "../offline-requests";
import { createHarness, type Harness } from "../runtime-harness";

let h: Harness;
let restore: (() => void) | null = null;
beforeAll(() => {
  process.env.SUPPORT_DEFER_MS = "1";
});
afterAll(() => {
  delete process.env.SUPPORT_DEFER_MS;
});
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  restore?.();
  restore = null;
  await h.close();
});

const DANA = { customer: "dana@example.com" };

/**
 * Holds every read of `tool`'s gate facts until `n` reads have happened (or 5 s have passed): all `n` calls are judged
 * on the world as it was before any of them was saved.
 */
function holdGateReads(toolName: string, n: number): () => void {
  const tool = getTool(toolName) as ToolDefinition<unknown>;
  const original = tool.facts;
  const waiting: Array<() => void> = [];
  tool.facts = async (input, ctx) => {
    const facts = await original.call(tool, input, ctx);
    if (waiting.length < n) {
      await new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (waiting.length === n) for (const r of waiting) r();
        setTimeout(resolve, 5000);
      });
    }
    return facts;
  };
  return () => {
    tool.facts = original;
  };
}

/**
 * The model of every conversation here: its first request proposes the call its customer's first message names
 * ("refund 9000 on A-1002", "replace A-1001"); once it has the result, it says so.
 */
function scriptCalls(count: number) {
  let n = 0;
  for (let i = 0; i < count; i++) {
    h.script.push({
      fn: (req: OfflineRequest): OfflineStep => {
        if (answersTools(req)) {
          return { reply: { content: [{ type: "text", text: "Done, as the result says." }], stop_reason: "end_turn" } };
        }
        const first = req.messages[0]!;
        const said = typeof first.content === "string" ? first.content : JSON.stringify(first.content);
        const refund = /refund (\d+) on (A-\d+)/.exec(said);
        const replace = /replace (A-\d+)/.exec(said);
        n++;
        const use = refund
          ? { name: "refund_order", input: { order_number: refund[2], amount_cents: Number(refund[1]), reason: "arrived damaged" } }
          : { name: "create_replacement", input: { order_number: replace![1], reason: "arrived damaged" } };
        return { reply: { content: [{ type: "tool_use", id: `toolu_race_${n}`, ...use }], stop_reason: "tool_use" } };
      },
    });
  }
}

/** Both messages at once, each in its own new conversation of Dana's (each answered in its own advance). */
function atOnce(a: string, b: string) {
  return Promise.all([h.say(a, DANA), h.say(b, DANA)]);
}

async function callsOf(name: string) {
  return h.db.toolCall.findMany({ where: { name }, orderBy: { createdAt: "asc" } });
}

describe("two conversations of one customer at once cannot split past a band", () => {
  it("$90 in each of two tabs on the $250 order A-1002: $90 is refunded automatically, the other $90 waits for a person", async () => {
    scriptCalls(8);
    restore = holdGateReads("refund_order", 2);
    const [a, b] = await atOnce("refund 9000 on A-1002 please", "refund 9000 on A-1002 please");

    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } });
    const calls = await callsOf("refund_order");
    // Both were judged on a world without the other (the race happened).
    expect(calls.map((c) => (c.gateFacts as { totals: { orderPendingCents: number } }).totals.orderPendingCents)).toEqual([0, 0]);
    expect(order.refundedCents).toBe(9000);
    expect(calls.map((c) => c.status).sort()).toEqual(["PARKED", "SUCCEEDED"]);
    // The one that waits says why: the other's $90 is done.
    const pending = await h.pendingHandoffs();
    expect(pending).toHaveLength(1);
    expect(pending[0]!.reason).toMatch(/\$90\.00 already refunded on A-1002/);
    // Judged again at once, in the same advance: no worker needed for the customer to hear that a person decides.
    expect([a.phase, b.phase].sort()).toEqual(["COMPLETED", "WAITING_FOR_APPROVAL"]);
    // The audit trail says the call was judged again where it acted, and why.
    const parked = calls.find((c) => c.status === "PARKED")!;
    const gates = await h.db.gateDecision.findMany({ where: { toolCallId: parked.id }, orderBy: { createdAt: "asc" } });
    expect(gates.map((g) => `${g.gate}:${g.decision}`)).toContain("automatic_band:defer");
    expect(await h.effects()).toHaveLength(1);

    // A person approves it: it runs, once, and that run's conversation completes.
    const decided = await h.decide(pending[0]!.id, "rita@acme.test", "approve");
    expect(decided.outcome).toBe("approved");
    for (let i = 0; i < 3; i++) await runWorkerOnce(h.deps);
    expect((await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } })).refundedCents).toBe(18000);
    expect(await h.effects()).toHaveLength(2);
    const after = await h.db.run.findMany({ where: { id: { in: [a.runId!, b.runId!] } }, select: { phase: true } });
    expect(after.map((r) => r.phase)).toEqual(["COMPLETED", "COMPLETED"]);
    expect(await h.transcriptProblems(a.conversationId)).toEqual([]);
    expect(await h.transcriptProblems(b.conversationId)).toEqual([]);
  });

  it("four tabs at once, $40 each on two orders: the customer's $150 allows three; the fourth waits, and nothing deadlocks", async () => {
    scriptCalls(16);
    restore = holdGateReads("refund_order", 4);
    const texts = ["refund 4000 on A-1002", "refund 4000 on A-1004", "refund 4000 on A-1002", "refund 4000 on A-1004"];
    const outs = await Promise.all(texts.map((t) => h.say(t, DANA)));
    expect(outs.map((o) => o.phase).sort()).toEqual(["COMPLETED", "COMPLETED", "COMPLETED", "WAITING_FOR_APPROVAL"]);

    const orders = await h.db.order.findMany({ where: { number: { in: ["A-1002", "A-1004"] } } });
    expect(orders.reduce((sum, o) => sum + o.refundedCents, 0)).toBe(12000);
    const calls = await callsOf("refund_order");
    expect(calls.map((c) => c.status).sort()).toEqual(["PARKED", "SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
    expect(await h.db.run.count({ where: { phase: "DEAD_LETTER" } })).toBe(0);
  });

  it("$90 on A-1002 and $90 on A-1004 at once: each order is within its band, but the customer's $150 is not", async () => {
    scriptCalls(8);
    restore = holdGateReads("refund_order", 2);
    await atOnce("refund 9000 on A-1002 please", "refund 9000 on A-1004 please");

    const orders = await h.db.order.findMany({ where: { number: { in: ["A-1002", "A-1004"] } } });
    expect(orders.reduce((sum, o) => sum + o.refundedCents, 0)).toBe(9000);
    const calls = await callsOf("refund_order");
    expect(calls.map((c) => c.status).sort()).toEqual(["PARKED", "SUCCEEDED"]);
    const pending = await h.pendingHandoffs();
    expect(pending).toHaveLength(1);
    expect(pending[0]!.rule?.reason).toMatch(/automatic refunds in the last 30 days would reach \$180\.00/);
  });

  it("a replacement of A-1001 in each of two tabs, with a $50 automatic limit: one ships, the other waits", async () => {
    await h.publish((r) => ({ ...r, replacement: { ...r.replacement, autoMaxCents: 5000 } }));
    scriptCalls(8);
    restore = holdGateReads("create_replacement", 2);
    await atOnce("replace A-1001 please, it arrived damaged", "replace A-1001 please, it arrived damaged");

    const shipments = await h.db.shipment.findMany({ where: { kind: "replacement" } });
    expect(shipments).toHaveLength(1);
    const calls = await callsOf("create_replacement");
    expect(calls.map((c) => c.status).sort()).toEqual(["PARKED", "SUCCEEDED"]);
  });
});

describe("two approvals that together pass the ceiling", () => {
  it("$300 in each of two tabs on A-1003 ($820), both approved: $300 is refunded; the other is refused above the $500 ceiling and escalated", async () => {
    scriptCalls(8);
    restore = holdGateReads("refund_order", 2);
    const [a, b] = await atOnce("refund 30000 on A-1003 please", "refund 30000 on A-1003 please");
    // Each was judged alone ($300: a reviewer's band), so each waits for one approver.
    expect([a.phase, b.phase]).toEqual(["WAITING_FOR_APPROVAL", "WAITING_FOR_APPROVAL"]);
    const pending = await h.pendingHandoffs();
    expect(pending).toHaveLength(2);

    for (const handoff of pending) await h.decide(handoff.id, "raj@acme.test", "approve");
    for (let i = 0; i < 3; i++) await runWorkerOnce(h.deps);

    // Policy: refunds on one order above $500 in total cannot be approved in the queue.
    expect((await h.db.order.findFirstOrThrow({ where: { number: "A-1003" } })).refundedCents).toBe(30000);
    const calls = await callsOf("refund_order");
    expect(calls.map((c) => c.status).sort()).toEqual(["DENIED", "SUCCEEDED"]);
    const refused = calls.find((c) => c.status === "DENIED")!;
    expect(refused.result).toMatchObject({ escalated: true });
    const gates = await h.db.gateDecision.findMany({ where: { toolCallId: refused.id }, orderBy: { createdAt: "asc" } });
    expect(gates.map((g) => `${g.gate}:${g.decision}`)).toEqual(["refund_policy:ask", "approval_ceiling:defer", "refund_policy:deny"]);
    const escalation = await h.db.handoff.findFirstOrThrow({ where: { kind: "ESCALATION" } });
    expect(escalation.payload).toMatchObject({ trigger: "policy_ceiling", refusedCall: { toolName: "refund_order", amountCents: 30000 } });
    expect(await h.effects()).toHaveLength(1);
    // The loser's approval, as the supervisor's run page words it: approved, but not done — and why.
    const supervisor = { tenantId: h.acme.id, role: "supervisor" as const };
    const review = await runReview(h.db, supervisor, refused.runId);
    const approval = review.decisions.find((d) => d.handoff.kind === "APPROVAL")!;
    expect(decisionInWords(approval.facts)[0]).toMatch(
      /^Approved by Raj .* — but not done: refunds on A-1003 would total \$600\.00 .*above \$500\.00; passed to a person$/,
    );
    // The same on the queue's cards and in the JSON API: what people decided, and what became of each call.
    const cards = await queueHandoffs(h.db, { tenantId: h.acme.id, staffId: "nobody" }, { ...DEFAULT_QUEUE_FILTER, status: "decided" });
    const approvals = cards.filter((c) => c.kind === "APPROVAL").map((c) => decidedSummary(c));
    expect(approvals.sort()).toEqual(["Approved by Raj", "Approved by Raj — not done"]);
    const [row] = (await searchRuns(h.db, supervisor, runFilterSchema.parse({ q: refused.runId }))).runs;
    expect(row!.handoffs.filter((x) => x.kind === "APPROVAL").map((x) => x.summary)).toEqual(["Approved by Raj — not done"]);
    const api = await apiHandoff(h.db, h.acme.id, approval.handoff.id);
    expect(api).toMatchObject({ status: "APPROVED", call: { status: "DENIED", result: { escalated: true } } });
    // And on the conversation's take-over page, beside the escalation it became.
    const taken = await conversationDetail(h.db, h.acme.id, review.run.conversationId);
    expect(taken.handoffs.map((x) => [x.kind, x.status, x.call?.status ?? null]).sort()).toEqual([
      ["APPROVAL", "APPROVED", "DENIED"],
      ["ESCALATION", "PENDING", null],
    ]);
    // Both runs end, each with every tool_use answered.
    const runs = await h.db.run.findMany({ where: { id: { in: [a.runId!, b.runId!] } }, select: { phase: true } });
    expect(runs.map((r) => r.phase)).toEqual(["COMPLETED", "COMPLETED"]);
    for (const out of [a, b]) expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });
});

describe("two approvals that together reach the four-eyes threshold", () => {
  it("$250 and $200 in two tabs on A-1003, each approved by Raj alone: $250 is refunded; the $200 would make $450, which needs two people", async () => {
    scriptCalls(8);
    restore = holdGateReads("refund_order", 2);
    const [a, b] = await atOnce("refund 25000 on A-1003 please", "refund 20000 on A-1003 please");
    // Each was judged alone (under the $400 from which two people approve), so each waits for one approver.
    expect([a.phase, b.phase]).toEqual(["WAITING_FOR_APPROVAL", "WAITING_FOR_APPROVAL"]);
    const pending = await h.pendingHandoffs();
    expect(pending.map((p) => p.requiredApprovals)).toEqual([1, 1]);

    for (const handoff of pending) await h.decide(handoff.id, "raj@acme.test", "approve");
    for (let i = 0; i < 3; i++) await runWorkerOnce(h.deps);

    // Policy: from $400 of refunds on one order in total, two different people approve. The first to run is
    // refunded; the other, judged again where it acts on what is done by then, had one approval of the two needed.
    const calls = await callsOf("refund_order");
    expect(calls.map((c) => c.status).sort()).toEqual(["FAILED", "SUCCEEDED"]);
    const done = calls.find((c) => c.status === "SUCCEEDED")!;
    const failed = calls.find((c) => c.status === "FAILED")!;
    expect((await h.db.order.findFirstOrThrow({ where: { number: "A-1003" } })).refundedCents).toBe(
      (done.input as { amount_cents: number }).amount_cents,
    );
    expect(failed.result).toMatchObject({
      error_category: "permission",
      message: expect.stringMatching(/would total \$450\.00 .*two approvers from \$400\.00.* It had one approval\. Nothing was done/),
    });
    expect(await h.effects()).toHaveLength(1);
    // Asked again, it waits for two people, on the totals as they are now.
    const again = await h.say("refund 20000 on A-1003 please", DANA);
    expect(again.handoffs).toMatchObject([{ requiredApprovals: 2 }]);
    for (const out of [a, b]) expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });
});

describe("through the returns specialist", () => {
  it("each tab's agent asks the returns specialist for $90 on A-1002 at once: one refund runs, the other waits for a person", async () => {
    await h.publish((r) => ({ ...r, allowedTools: [...r.allowedTools, ...SPECIALISTS.map((x) => x.tool)] }));
    let n = 0;
    for (let i = 0; i < 16; i++)
      h.script.push({
        fn: (req): OfflineStep => {
          n++;
          const reply = (content: unknown[], stop_reason: string): OfflineStep => ({ reply: { content, stop_reason } as never });
          if (isSpecialistRequest(req)) {
            if (answersTools(req)) return reply([{ type: "text", text: "Done as the result says." }], "end_turn");
            const input = { order_number: "A-1002", amount_cents: 9000, reason: "arrived damaged" };
            return reply([{ type: "tool_use", id: `toolu_sp_${n}`, name: "refund_order", input }], "tool_use");
          }
          if (answersTools(req)) return reply([{ type: "text", text: "The returns team has it." }], "end_turn");
          const task = { task: "Refund 90 dollars on A-1002, it arrived damaged.", order_number: "A-1002" };
          return reply([{ type: "tool_use", id: `toolu_ag_${n}`, name: "ask_returns_specialist", input: task }], "tool_use");
        },
      });
    restore = holdGateReads("refund_order", 2);
    await atOnce("refund on A-1002 please", "refund on A-1002 please");
    for (let i = 0; i < 5; i++) await runWorkerOnce(h.deps);

    expect((await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } })).refundedCents).toBe(9000);
    const calls = await callsOf("refund_order");
    expect(calls.map((c) => c.status).sort()).toEqual(["PARKED", "SUCCEEDED"]);
    expect(await h.pendingHandoffs()).toHaveLength(1);
    expect(await h.effects()).toHaveLength(1);
  });
});

describe("what the band allows still runs automatically when tabs race", () => {
  it("$40 and $40 on A-1002 at once: both refunded, no person asked", async () => {
    scriptCalls(8);
    restore = holdGateReads("refund_order", 2);
    const [a, b] = await atOnce("refund 4000 on A-1002 please", "refund 4000 on A-1002 please");

    expect((await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } })).refundedCents).toBe(8000);
    expect((await callsOf("refund_order")).map((c) => c.status)).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    expect([a.phase, b.phase]).toEqual(["COMPLETED", "COMPLETED"]);
    expect(await h.pendingHandoffs()).toHaveLength(0);
  });
});
