// A person in the conversation, as the agent and the supervisor see it: what a person said while a run held the
// conversation reaches the agent, and a reply their takeover held back is never counted as the agent's answer.
import { afterEach, describe, expect, it, vi } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import type { HookSlot } from "../hook-after";
import { resumeRun } from "@/lib/runtime/resume";
import { handBackConversation, replyAsStaff, takeOverConversation } from "@/lib/conversations/takeover";
import { receiveCustomerMessage } from "@/lib/conversations/intake";
import { runWorkerOnce } from "@/lib/runtime/worker";
import { runReview } from "@/lib/console/runs";
import { resolvePeriod, shopMetrics } from "@/lib/console/metrics";

// The read that finds a person's words alone waiting, with a hook that runs right after it (see the race below).
const afterQueuedRead = vi.hoisted((): HookSlot => ({ hook: null }));
vi.mock("@/lib/store/transcript", async (importOriginal) => {
  const real = await importOriginal<typeof import("@/lib/store/transcript")>();
  const { hookAfter } = await import("../hook-after");
  return { ...real, queuedIsStaffOnly: hookAfter(real.queuedIsStaffOnly, afterQueuedRead) };
});

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

const dana = { customer: "dana@example.com" };

describe("a person's reply while the agent's run waits for an approval", () => {
  it("reaches the agent after hand-back, so it does not contradict what the person told the customer", async () => {
    h = await createHarness();
    const out = await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const raj = { tenantId: h.acme.id, staffId: h.staff.raj.id };
    await takeOverConversation(h.db, raj, out.conversationId);
    const promise = "Dana, Raj here: I am refunding $150.00 now and mailing you a 10% coupon code ZEBRA-77 today.";
    await replyAsStaff(h.db, raj, out.conversationId, promise);
    const handoff = out.handoffs[0]!;
    const decided = await h.decide(handoff.id, "raj@acme.test", "edit", {
      version: handoff.version,
      input: { order_number: "A-1002", amount_cents: 15000, reason: "partial" },
    });
    expect(decided.outcome).toBe("approved");
    await handBackConversation(h.db, raj, out.conversationId);
    const before = h.script.requests.length;
    await h.say("Thanks! Which coupon code did you promise me?", { conversationId: out.conversationId });
    expect(h.script.requests.length).toBeGreaterThan(before);
    const next = h.script.requests[before]!;
    // The person's words are part of what the model reads once the conversation is handed back to it, once.
    expect(JSON.stringify(next.messages).split("ZEBRA-77").length - 1).toBe(1);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("a person's words wait for a run that ends while they hold the conversation, and reach the agent at hand-back, once", async () => {
    h = await createHarness();
    h.script.push({ http: 500 }); // the model is briefly unavailable: the run waits for a retry, holding the conversation
    const out = await h.say("Hi, where is my order A-1002? I'm dana@example.com.");
    expect(out.phase).toBe("WAITING_FOR_RETRY");
    const raj = { tenantId: h.acme.id, staffId: h.staff.raj.id };
    await takeOverConversation(h.db, raj, out.conversationId);
    await replyAsStaff(h.db, raj, out.conversationId, "Dana, Raj here: use coupon ZEBRA-77 on your next order.");
    // The retry answers (held back: Raj owns the conversation) and the run ends, Raj's words not delivered by it.
    await h.db.run.update({ where: { id: out.runId! }, data: { nextAttemptAt: new Date(Date.now() - 1000) } });
    await runWorkerOnce(h.deps);
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
    await handBackConversation(h.db, raj, out.conversationId);
    const before = h.script.requests.length;
    await h.say("Which coupon code was it?", { conversationId: out.conversationId });
    const sent = JSON.stringify(h.script.requests[before]!.messages);
    expect(sent.split("ZEBRA-77").length - 1, "Raj's words, in the first request after hand-back, once").toBe(1);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
    expect(await h.db.conversation.findUniqueOrThrow({ where: { id: out.conversationId } })).toMatchObject({ queuedCount: 0 });
  });

  /**
   * A run waiting for a retry holds the conversation; a person takes it over, writes to the customer (their words wait
   * for the run) and hands it back before the run ends. Returns the conversation, its run, and how many model
   * requests and agent replies there were at the hand-back.
   */
  async function handedBackWhileARunWaits() {
    const harness = h!;
    harness.script.push(
      { http: 500 }, // the model is briefly unavailable: the run waits for a retry
      { reply: { content: [{ type: "text", text: "Happy to help. Which order is it?" }], stop_reason: "end_turn" } }, // and answers
    );
    const out = await harness.say("Hi, I'd like some help with an order.");
    expect(out.phase).toBe("WAITING_FOR_RETRY");
    const raj = { tenantId: harness.acme.id, staffId: harness.staff.raj.id };
    await takeOverConversation(harness.db, raj, out.conversationId);
    await replyAsStaff(harness.db, raj, out.conversationId, "Dana, Raj here: use coupon ZEBRA-77 on your next order.");
    await handBackConversation(harness.db, raj, out.conversationId);
    await harness.db.run.update({ where: { id: out.runId! }, data: { nextAttemptAt: new Date(Date.now() - 1000) } });
    return { ...out, requests: harness.script.requests.length, replies: (await agentReplies(out.conversationId)).length };
  }
  const agentReplies = (conversationId: string) =>
    h!.db.message.findMany({ where: { conversationId, author: "AGENT", shownToCustomer: true }, orderBy: { seq: "asc" } });
  const runsOf = (conversationId: string) =>
    h!.db.run.findMany({ where: { conversationId }, orderBy: { startedAt: "asc" }, select: { id: true, phase: true, outcome: true } });

  it("a person's words that wait for a run ending after the hand-back reach the agent with the customer's next message; unasked, it says nothing", async () => {
    h = await createHarness();
    const at = await handedBackWhileARunWaits();
    await runWorkerOnce(h.deps); // the retry answers the customer (no tool call: nothing carries Raj's words to the model)
    // One request (the retry's) and one reply: the agent did not answer Raj's words to the customer.
    expect(h.script.requests.length - at.requests).toBe(1);
    expect((await agentReplies(at.conversationId)).length - at.replies).toBe(1);
    const runs = await runsOf(at.conversationId);
    expect(runs).toHaveLength(2);
    expect(runs[1]).toMatchObject({ phase: "COMPLETED", outcome: "a person's words delivered; nothing from the customer to answer" });
    expect(await h.db.modelCall.count({ where: { runId: runs[1]!.id } })).toBe(0);
    expect(await h.db.conversation.findUniqueOrThrow({ where: { id: at.conversationId } })).toMatchObject({
      activeRunId: null,
      queuedCount: 0,
    });
    // The customer's next message: the model reads Raj's words with it, once.
    const before = h.script.requests.length;
    await h.say("Which coupon code was it?", { conversationId: at.conversationId });
    const sent = JSON.stringify(h.script.requests[before]!.messages);
    expect(sent.split("ZEBRA-77").length - 1).toBe(1);
    expect(await h.transcriptProblems(at.conversationId)).toEqual([]);
  });

  it("the customer writing as a person's words alone are delivered: their text is not taken with them, and is answered", async () => {
    h = await createHarness();
    const at = await handedBackWhileARunWaits();
    const harness = h;
    // Right after the run that delivers Raj's words found them alone, the customer writes (queued: a run holds the chat).
    afterQueuedRead.hook = async () => {
      const queued = await receiveCustomerMessage(harness.db, {
        tenantId: harness.acme.id,
        conversationId: at.conversationId,
        text: "And can you tell me when A-1002 arrives?",
        model: "m",
      });
      expect(queued.kind).toBe("queued");
    };
    await runWorkerOnce(h.deps);
    expect(afterQueuedRead.hook).toBeNull();
    const runs = await runsOf(at.conversationId);
    expect(runs.map((r) => r.phase)).toEqual(["COMPLETED", "COMPLETED", "COMPLETED"]);
    expect(runs[1]!.outcome).toBe("a person's words delivered; nothing from the customer to answer");
    // The third run delivered the customer's text and answered it: two requests, the retry's and its.
    expect(h.script.requests.length - at.requests).toBe(2);
    expect(JSON.stringify(h.script.requests.at(-1)!.messages)).toContain("when A-1002 arrives");
    expect((await agentReplies(at.conversationId)).length - at.replies).toBe(2);
    expect(await h.db.conversation.findUniqueOrThrow({ where: { id: at.conversationId } })).toMatchObject({
      activeRunId: null,
      queuedCount: 0,
    });
    expect(await h.db.message.count({ where: { conversationId: at.conversationId, pendingDelivery: true } })).toBe(0);
    expect(await h.transcriptProblems(at.conversationId)).toEqual([]);
  });

  it("(control) a person's reply when no run waits does reach the agent after hand-back", async () => {
    h = await createHarness();
    const out = await h.say("I'm dana@example.com. I want to talk to a human please.");
    const raj = { tenantId: h.acme.id, staffId: h.staff.raj.id };
    await takeOverConversation(h.db, raj, out.conversationId);
    await replyAsStaff(h.db, raj, out.conversationId, "Dana, Raj here: your coupon code is ZEBRA-77.");
    await handBackConversation(h.db, raj, out.conversationId);
    const before = h.script.requests.length;
    await h.say("Thanks! Which coupon code did you give me?", { conversationId: out.conversationId });
    const next = h.script.requests[before]!;
    expect(JSON.stringify(next.messages)).toContain("ZEBRA-77");
  });
});

describe("the supervisor's view of a run whose reply a person's takeover held back", () => {
  it("a run that finished after a person took over is not reported as resolved by the agent", async () => {
    h = await createHarness();
    // The model is briefly unavailable: the run waits for a retry.
    h.script.push({ http: 500 });
    const out = await h.say("Hi, where is my order A-1002? I'm dana@example.com.");
    expect(out.phase).toBe("WAITING_FOR_RETRY");
    // Meanwhile a person takes the conversation over.
    await takeOverConversation(h.db, { tenantId: h.acme.id, staffId: h.staff.raj.id }, out.conversationId);
    const supervisor = { tenantId: h.acme.id, role: "supervisor" as const };
    const period = resolvePeriod({});
    const before = await shopMetrics(h.db, supervisor, period);
    await h.db.run.update({ where: { id: out.runId! }, data: { nextAttemptAt: new Date(Date.now() - 1000) } });
    await runWorkerOnce(h.deps);
    const after = await shopMetrics(h.db, supervisor, period);
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(run.phase).toBe("COMPLETED");
    // The agent's reply was held back: the customer never saw it.
    const agentReplies = await h.db.message.findMany({ where: { runId: out.runId!, author: "AGENT" } });
    expect(agentReplies.at(-1)!.shownToCustomer).toBe(false);
    const review = await runReview(h.db, { tenantId: h.acme.id, role: "supervisor" }, out.runId!);
    expect(review.heldBackReply).not.toBeNull();
    // lib/console/run-outcome.ts: a reply suppressed because a person owns the conversation reads as escalated.
    expect.soft(review.summary!.outcome).toBe("escalated");
    // The metrics count it the same way: not one more run "resolved by the agent".
    expect(after.resolvedByAgent.runs - before.resolvedByAgent.runs).toBe(0);
  });
});

// Held (kept as a regression probe). Last in the file: the policy cache is per process, and this harness offers the
// specialists (see test/runtime-harness.ts).
describe("an edit of a call a specialist parked", () => {
  it("runs the edited terms, not the specialist's original call", async () => {
    h = await createHarness({ specialists: true });
    const out = await h.say("the backpack from A1002 showed up torn, I want my money back", dana);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const [handoff] = await h.db.handoff.findMany({ where: { runId: out.runId! } });
    const { outcome } = await resumeRun(
      h.deps,
      { tenantId: h.acme.id, staffId: h.staff.raj.id },
      {
        handoffId: handoff!.id,
        decision: "edit",
        version: handoff!.version,
        editedInput: { order_number: "A-1002", amount_cents: 15000, reason: "partial: arrived damaged" },
      },
    );
    expect(outcome.kind).toBe("approved");
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } });
    expect(order.refundedCents).toBe(15000);
    const refunds = await h.db.refund.findMany({ where: { orderId: order.id } });
    expect(refunds.map((r) => r.amountCents)).toEqual([15000]);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });
});
