import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import { storeOf } from "@/lib/db/kysely";
import { advanceConversationFrom, claimFor } from "@/lib/runtime/advance";
import { retryDeadLetter, type RetryActor } from "@/lib/runtime/retry-dead-letter";
import { runWorkerOnce } from "@/lib/runtime/worker";
import { runColumns } from "../rows";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const text = (t: string) => ({ type: "text" as const, text: t });

function actor(who: "rita" | "sol" | "ada" | "gus"): RetryActor {
  const s = h.staff[who];
  const role = who === "sol" ? "supervisor" : who === "ada" ? "admin" : "reviewer";
  return { tenantId: s.tenantId, staffId: s.id, role, email: s.email };
}

/** A run the provider refused outright (a 400 is not retried): dead-lettered at once, with its escalation. */
async function deadLetter() {
  h.script.push({ http: 400 });
  const out = await h.say("hi, where is my order?");
  expect(out.phase).toBe("DEAD_LETTER");
  return { runId: out.runId!, conversationId: out.conversationId };
}

describe("retrying a dead letter", () => {
  it("puts the run back for the worker, resolves its escalation, records who retried, and the run completes", async () => {
    const dl = await deadLetter();
    const retried = await retryDeadLetter(storeOf(h.db), actor("sol"), dl.runId);
    expect(retried.conversationId).toBe(dl.conversationId);
    expect(retried.resolvedHandoffs).toHaveLength(1);

    const run = await h.db.run.findUniqueOrThrow({ where: { id: dl.runId } });
    expect(run).toMatchObject({ phase: "RUNNING", endedAt: null, outcome: null, requestAttempts: 0, leaseOwner: null });
    const conv = await h.db.conversation.findUniqueOrThrow({ where: { id: dl.conversationId } });
    expect(conv).toMatchObject({ activeRunId: dl.runId, status: "open" });
    const esc = await h.db.handoff.findFirstOrThrow({ where: { runId: dl.runId, kind: "ESCALATION" } });
    expect(esc).toMatchObject({ status: "RESOLVED", decision: "retried", decidedById: h.staff.sol.id });
    const audit = await h.db.auditEvent.findMany({ where: { runId: dl.runId, action: "run.retried" } });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor: "sol@acme.test", subject: dl.runId });
    expect(audit[0]!.data).toMatchObject({ staffId: h.staff.sol.id, previousOutcome: expect.stringMatching(/^no_progress: /) });
    const events = await h.db.event.findMany({ where: { conversationId: dl.conversationId, type: "run.phase" } });
    expect(events.map((e) => (e.data as { phase: string }).phase)).toContain("RUNNING");

    // The worker picks it up: the model answers this time, and the run completes with a valid transcript.
    h.script.push({ reply: { content: [text("Happy to help — which order is it?")], stop_reason: "end_turn" } });
    await runWorkerOnce(h.deps);
    const done = await h.db.run.findUniqueOrThrow({ where: { id: dl.runId } });
    expect(done.phase).toBe("COMPLETED");
    expect(done.outcome).toBe("end_turn");
    expect(await h.transcriptProblems(dl.conversationId)).toEqual([]);
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: dl.conversationId } })).activeRunId).toBeNull();
  });

  it("refuses a second retry, also when both race, and writes nothing for the loser", async () => {
    const dl = await deadLetter();
    const results = await Promise.allSettled([
      retryDeadLetter(storeOf(h.db), actor("sol"), dl.runId),
      retryDeadLetter(storeOf(h.db), actor("ada"), dl.runId),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const refused = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ code: "CONFLICT" });
    expect(await h.db.auditEvent.count({ where: { runId: dl.runId, action: "run.retried" } })).toBe(1);

    // Once it is running again (or done), a retry is refused plainly.
    await expect(retryDeadLetter(storeOf(h.db), actor("sol"), dl.runId)).rejects.toMatchObject({
      code: "CONFLICT",
      userMessage: expect.stringContaining("already retried"),
    });
  });

  it("refuses reviewers, other shops and unknown runs", async () => {
    const dl = await deadLetter();
    await expect(retryDeadLetter(storeOf(h.db), actor("rita"), dl.runId)).rejects.toMatchObject({ code: "FORBIDDEN" });
    // Gus is a reviewer of globex: as a supervisor of his own shop he still cannot see acme's run.
    await expect(retryDeadLetter(storeOf(h.db), { ...actor("gus"), role: "supervisor" }, dl.runId)).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    await expect(retryDeadLetter(storeOf(h.db), actor("sol"), "no-such-run")).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect((await h.db.run.findUniqueOrThrow({ where: { id: dl.runId } })).phase).toBe("DEAD_LETTER");
  });

  it("refuses while a person owns the conversation, and while another run answers it", async () => {
    const dl = await deadLetter();
    await h.db.conversation.update({ where: { id: dl.conversationId }, data: { status: "human" } });
    await expect(retryDeadLetter(storeOf(h.db), actor("sol"), dl.runId)).rejects.toMatchObject({ code: "CONVERSATION_OWNED" });

    await h.db.conversation.update({ where: { id: dl.conversationId }, data: { status: "escalated" } });
    h.script.push({ reply: { content: [text("Still here.")], stop_reason: "end_turn" } });
    // The customer writes again: a new run takes the conversation. Hold it there (a run mid-advance).
    const other = await h.db.run.create({
      data: {
        tenantId: h.acme.id,
        conversationId: dl.conversationId,
        ...runColumns,
      },
    });
    await h.db.conversation.update({ where: { id: dl.conversationId }, data: { activeRunId: other.id } });
    await expect(retryDeadLetter(storeOf(h.db), actor("sol"), dl.runId)).rejects.toMatchObject({ code: "CONFLICT" });
    expect((await h.db.run.findUniqueOrThrow({ where: { id: dl.runId } })).phase).toBe("DEAD_LETTER");
  });

  it("the retrier can take the lease with the retry and continue the run itself: no worker takes it in between", async () => {
    const dl = await deadLetter();
    const claim = claimFor(h.deps);
    await retryDeadLetter(storeOf(h.db), actor("ada"), dl.runId, { claim });
    expect(await runWorkerOnce(h.newDeps("other-worker"))).toMatchObject({ advanced: 0 });
    h.script.push({ reply: { content: [text("Sorry for the wait — how can I help?")], stop_reason: "end_turn" } });
    const advanced = await advanceConversationFrom(h.deps, dl.runId, { claimedAs: claim });
    expect(advanced).toMatchObject({ claimed: true, phase: "COMPLETED" });
  });

  it("a retried run is charged its own conversation's spend, not the whole shop's (a busy shop's history)", async () => {
    const dl = await deadLetter();
    // Another conversation spent more than a conversation's budget ($2.00 in the demo policy).
    const other = await h.say("hello there");
    await h.db.run.update({ where: { id: other.runId! }, data: { costMicros: 3_000_000 } });
    await retryDeadLetter(storeOf(h.db), actor("sol"), dl.runId);
    h.script.push({ reply: { content: [text("Sorry for the wait — how can I help?")], stop_reason: "end_turn" } });
    expect(await advanceConversationFrom(h.deps, dl.runId)).toMatchObject({ claimed: true, phase: "COMPLETED" });
  });
});
