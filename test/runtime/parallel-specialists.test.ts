// The refund bands are on totals, and two specialists consulted in the SAME model turn count against each other: the
// second judges its refund with the first's (lib/runtime/tool-phase runCalls runs them one after another; a call the
// first gated and has not written yet counts as a call of the same turn — lib/runtime/gating UnsavedMoneyCall).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { answersTools, isSpecialistRequest } from "../offline-requests";
import type { Harness } from "../runtime-harness";
import { endTurn, harnessWithSpecialists, toolUse, use } from "./specialist-script";

let h: Harness;
beforeEach(async () => {
  h = await harnessWithSpecialists();
});
afterEach(async () => {
  await h.close();
});

/**
 * Scripts one turn that consults the returns specialist twice at once, each proposing `amount_cents` on `order`
 * (then reporting it done), and the agent's closing reply.
 */
function scriptTwoSpecialists(order: string, amount_cents: number, tasks: [string, string], reason: string) {
  let agentTurns = 0;
  let n = 0;
  for (let i = 0; i < 8; i++) {
    h.script.push({
      fn: (req) => {
        if (isSpecialistRequest(req)) {
          if (answersTools(req)) return endTurn(`Refunded on ${order}.`);
          n++;
          return toolUse(use(`r${n}`, "refund_order", { order_number: order, amount_cents, reason }));
        }
        agentTurns++;
        if (agentTurns === 1)
          return toolUse(
            use("s1", "ask_returns_specialist", { task: tasks[0], order_number: order }),
            use("s2", "ask_returns_specialist", { task: tasks[1], order_number: order }),
          );
        return endTurn("Both refunds are done.");
      },
    });
  }
}

describe("two specialists in one turn cannot split a refund", () => {
  it("two returns specialists in one turn, $90 each on the $250 order A-1002: at most $100 may be refunded without a person", async () => {
    scriptTwoSpecialists(
      "A-1002",
      9000,
      ["The sleeve arrived torn; refund 90 dollars.", "The zip arrived broken; refund 90 dollars."],
      "arrived damaged",
    );
    const out = await h.say("A-1002: the sleeve is torn ($90) and the zip is broken ($90). Ask your returns team for each.", {
      customer: "dana@example.com",
    });

    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } });
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId!, name: "refund_order" } });
    const auto = calls.filter((c) => c.status === "SUCCEEDED" && c.decidedById === null);
    // Policy: refunds on one order total ≤ $100 automatically; $180 needs a person.
    expect({ refundedCents: order.refundedCents, automatic: auto.length, statuses: calls.map((c) => c.status) }).toMatchObject({
      refundedCents: 9000,
      automatic: 1,
    });
  });

  it("two returns specialists in one turn, $300 each on A-1003 ($820): $600 is above the $500 ceiling — one waits for a person, the other is refused and escalated", async () => {
    scriptTwoSpecialists(
      "A-1003",
      30000,
      ["Parcel lost: refund 300 dollars for the tent.", "Parcel lost: refund 300 dollars for the stove."],
      "lost in transit",
    );
    const out = await h.say("A-1003 never arrived. $300 for the tent and $300 for the stove, one specialist each.", {
      customer: "dana@example.com",
    });
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId!, name: "refund_order" } });
    const handoffs = await h.db.handoff.findMany({ where: { runId: out.runId!, kind: "APPROVAL" } });
    // Each handoff shows the reviewer "$300.00" on its own (one approver each); Raj (authority $1,000) approves both.
    for (const x of handoffs) await h.decide(x.id, "raj@acme.test", "approve");
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1003" } });
    const what = JSON.stringify({ gated: calls.map((c) => c.status), approvals: handoffs.length, refundedCents: order.refundedCents });
    // Policy: refunds on an order above $500 in total "cannot be approved in the queue".
    expect(order.refundedCents, what).toBeLessThanOrEqual(50000);
    expect(handoffs, what).toHaveLength(1);
    expect(calls.map((c) => c.status).sort(), what).toEqual(["DENIED", "PARKED"]); // as gated, before the decision
    const escalation = await h.db.handoff.findFirstOrThrow({ where: { conversationId: out.conversationId, kind: "ESCALATION" } });
    expect(escalation.payload).toMatchObject({ trigger: "policy_ceiling" });
  });
});
