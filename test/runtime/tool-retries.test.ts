import { describe, expect, it } from "vitest";
import type { Harness } from "../runtime-harness";
import { harnessPerTest } from "./harness-per-test";
import { injectProviderFault } from "@/lib/commerce/faults";
import { runWorkerOnce } from "@/lib/runtime/worker";

let h: Harness;
harnessPerTest((harness) => (h = harness));

const tick = async () => {
  await new Promise((r) => setTimeout(r, 20));
  await runWorkerOnce(h.deps);
};
const AUTO_REFUND = "I'm dana@example.com. Please refund order A-1001, the zip broke.";

describe("transient tool failures", () => {
  it("wait for a retry with backoff under the same key, then succeed once", async () => {
    injectProviderFault("refund_order", "transient", 1);
    const out = await h.say(AUTO_REFUND);
    expect(out.phase).toBe("WAITING_FOR_RETRY");
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call).toMatchObject({ status: "RETRY_WAIT", attempts: 1 });
    expect(call.nextAttemptAt).not.toBeNull();
    await tick();
    const done = await h.db.toolCall.findFirstOrThrow({ where: { id: call.id } });
    expect(done).toMatchObject({ status: "SUCCEEDED", attempts: 2, idempotencyKey: call.idempotencyKey });
    expect(await h.effects()).toHaveLength(1);
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
  });

  it("a timeout after the effect committed is retried with the same key and returns the recorded outcome", async () => {
    injectProviderFault("refund_order", "timeout_after_commit", 1);
    const out = await h.say(AUTO_REFUND);
    expect(out.phase).toBe("WAITING_FOR_RETRY");
    expect(await h.effects()).toHaveLength(1); // it did happen
    await tick();
    expect(await h.effects()).toHaveLength(1); // and did not happen twice
    expect(await h.db.refund.count()).toBe(1);
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call.result).toMatchObject({ status: "refunded", replayed: true });
    const reply = await h.db.message.findFirstOrThrow({
      where: { conversationId: out.conversationId, author: "AGENT", shownToCustomer: true },
    });
    expect(reply.displayText).toMatch(/\$42\.50/);
  });

  it("exhausted retries → dead letter, visible to reviewers, customer told nothing was done", async () => {
    injectProviderFault("refund_order", "transient", 10);
    const out = await h.say(AUTO_REFUND);
    await tick();
    await tick();
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(run.phase).toBe("DEAD_LETTER");
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call).toMatchObject({ status: "FAILED", attempts: 3, isError: true });
    expect(await h.effects()).toHaveLength(0);
    const [esc] = await h.db.handoff.findMany({ where: { conversationId: out.conversationId, kind: "ESCALATION" } });
    expect(esc).toMatchObject({ status: "PENDING" });
    expect(esc!.payload).toMatchObject({ trigger: "no_progress" });
    const notices = await h.db.message.findMany({
      where: { conversationId: out.conversationId, shownToCustomer: true, author: "HARNESS" },
    });
    expect(notices.map((n) => n.displayText).join(" ")).toMatch(/nothing was changed/);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("a tool error after approval is never swallowed: the model sees is_error and does not claim success", async () => {
    const out = await h.say("I'm dana@example.com, order A-1002 arrived damaged. Please refund it.");
    // Between the proposal and the approval someone else refunded part of the order.
    await h.db.order.updateMany({ where: { number: "A-1002" }, data: { refundedCents: 20000 } });
    const decided = await h.decide(out.handoffs[0]!.id, "raj@acme.test", "approve");
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call).toMatchObject({ status: "FAILED", isError: true });
    expect(call.result).toMatchObject({ error_category: "business_rule", review: { decision: "approved" } });
    expect(decided.replies.map((r) => r.text).join(" ")).not.toMatch(/I've refunded|has been refunded/i);
    expect(await h.effects()).toHaveLength(0);
  });
});
