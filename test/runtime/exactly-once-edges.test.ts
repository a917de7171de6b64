// Exactly once, and nothing dropped, at the edges: an answer lost on the last attempt, a run dead-lettered between an
// approved call and its result, an edited approval judged again where it acts, a decision made while the run still runs.
import { describe, expect, it } from "vitest";
import type { Harness } from "../runtime-harness";
import { harnessPerTest } from "./harness-per-test";
import { injectProviderFault } from "@/lib/commerce/faults";
import { runWorkerOnce } from "@/lib/runtime/worker";

let h: Harness;
harnessPerTest((harness) => (h = harness));

const tick = async () => {
  await new Promise((r) => setTimeout(r, 30));
  await runWorkerOnce(h.deps);
};
const AUTO_REFUND = "I'm dana@example.com. Please refund order A-1001, the zip broke.";

describe("an answer lost on the last allowed attempt", () => {
  it("a refund that DID happen on the last attempt is never reported as 'nothing was done'", async () => {
    // Attempts 1 and 2: the provider is down (nothing happens). Attempt 3 (the policy's last): the provider refunds,
    // records it under the key, and its answer is lost.
    injectProviderFault("refund_order", "transient", 2);
    injectProviderFault("refund_order", "timeout_after_commit", 1);
    const out = await h.say(AUTO_REFUND);
    for (let i = 0; i < 4; i++) await tick();

    // The money moved: one refund, one ledger row.
    expect(await h.db.refund.count()).toBe(1);
    expect((await h.effects()).filter((e) => e.toolName === "refund_order")).toHaveLength(1);

    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    const said = JSON.stringify(call.result);
    // What the model, the escalation and the customer are told must not deny an effect that is in the ledger.
    expect.soft(said, `call ${call.status}: ${said}`).not.toMatch(/nothing was done/i);
    const notices = await h.db.message.findMany({
      where: { conversationId: out.conversationId, shownToCustomer: true, author: { not: "CUSTOMER" } },
    });
    const shown = notices.map((n) => n.displayText ?? "").join(" | ");
    expect(shown, "what the customer was shown").not.toMatch(/nothing was changed|nothing was done/i);
  });
});

describe("a run dead-lettered between an approved call and its result", () => {
  /** An approved refund whose results step keeps failing: the run dead-letters holding its conversation. */
  async function deadLetteredAfterApproval() {
    const { refuseWrites } = await import("../refused-writes");
    const out = await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const runId = out.runId!;
    // A step of the tool phase keeps failing (a value the database refuses — a bug, a constraint added later): the
    // message carrying the results cannot be written, so the run dead-letters after its attempts.
    const refused = await refuseWrites(h.db, {
      name: "refuse_results",
      op: "INSERT",
      table: "Message",
      when: `NEW."runId" = '${runId}' AND NEW.role = 'user' AND NEW.author = 'HARNESS'`,
      message: "refused for the test",
    });
    await h.decide(out.handoffs[0]!.id, "raj@acme.test", "approve");
    for (let i = 0; i < 8 && (await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase !== "DEAD_LETTER"; i++) await tick();
    expect((await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase).toBe("DEAD_LETTER");
    expect(await h.db.refund.count()).toBe(0); // the refund rolled back with its result each time
    await refused.stop();
    return { conversationId: out.conversationId, runId };
  }

  it("the customer writing afterwards never lands between the tool_use and its tool_result; the approved refund still runs once on retry", async () => {
    const { retryDeadLetter } = await import("@/lib/runtime/retry-dead-letter");
    const { storeOf } = await import("@/lib/db/kysely");
    const { conversationId, runId } = await deadLetteredAfterApproval();

    // Told "a person will follow up", the customer writes again before anyone retried the run.
    await h.say("Hello? Is my refund coming?", { conversationId });
    // The conversation waits for the run (its tool calls unanswered is its last message, as while a run is parked): the
    // customer's text is kept, queued, and told so — not appended after the unanswered tool_use.
    const problems = await h.transcriptProblems(conversationId);
    expect(
      problems.filter((p) => !p.endsWith("(last message)")),
      "the transcript as the model sees it",
    ).toEqual([]);
    const asked = await h.db.message.findFirstOrThrow({
      where: { conversationId, displayText: "Hello? Is my refund coming?" },
    });
    expect(asked).toMatchObject({ pendingDelivery: true, inTranscript: false });
    const told = await h.db.message.findFirst({
      where: { conversationId, seq: { gt: asked.seq }, shownToCustomer: true },
    });
    expect(told?.displayText).toMatch(/a person will follow up here/);

    // A supervisor retries the dead letter: the approved refund runs exactly once, and is not silently dropped.
    const sol = h.staff.sol;
    await retryDeadLetter(storeOf(h.db), { tenantId: sol.tenantId, staffId: sol.id, role: "supervisor", email: sol.email }, runId).catch(
      (e: unknown) => expect.soft(String(e), "retrying the dead letter").toBe(""),
    );
    await tick();
    expect.soft(await h.db.refund.count(), "approved refund run on retry").toBe(1);
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId, name: "refund_order" } });
    const runs = await h.db.run.findMany({ where: { conversationId }, orderBy: { startedAt: "asc" } });
    expect
      .soft(
        runs.map((r) => r.outcome),
        "how the runs ended",
      )
      .not.toContainEqual(expect.stringMatching(/broke the tool_use/));
    expect(call.status, "the approved call").toBe("SUCCEEDED");
    // …and the customer's question reached the model with the refund's result.
    expect(await h.transcriptProblems(conversationId)).toEqual([]);
    expect(await h.db.message.findFirstOrThrow({ where: { id: asked.id } })).toMatchObject({ pendingDelivery: false });
  });

  it("a person who takes the held conversation over and hands it back puts the run back: the refund runs once, and what was said meanwhile reaches the model", async () => {
    const { takeOverConversation, replyAsStaff, handBackConversation } = await import("@/lib/conversations/takeover");
    const { conversationId, runId } = await deadLetteredAfterApproval();
    await h.say("Hello? Is my refund coming?", { conversationId });
    // A reviewer (not a supervisor) takes it over — which resolves the escalation the dead letter opened, so nothing in
    // the queue asks anyone to retry the run — answers, and hands it back to the agent.
    const rita = { tenantId: h.staff.rita.tenantId, staffId: h.staff.rita.id };
    await takeOverConversation(h.db, rita, conversationId);
    await replyAsStaff(h.db, rita, conversationId, "Sorry for the wait, Dana. I'm passing you back to our assistant.");
    expect(await h.db.handoff.count({ where: { conversationId, kind: "ESCALATION", status: "PENDING" } })).toBe(0);
    const back = await handBackConversation(h.db, rita, conversationId);
    expect(back).toMatchObject({ status: "open", runPutBack: true });
    expect(await h.db.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({
      phase: "RUNNING",
      leaseOwner: null,
      requestAttempts: 0,
    });
    const audit = await h.db.auditEvent.findFirstOrThrow({ where: { action: "run.retried", subject: runId } });
    expect(audit).toMatchObject({ actor: h.staff.rita.email, data: expect.objectContaining({ why: "handed_back" }) });

    for (let i = 0; i < 4 && (await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase === "RUNNING"; i++) await tick();
    expect(await h.db.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ phase: "COMPLETED" });
    expect(await h.db.refund.count(), "the approved refund, run once").toBe(1);
    expect((await h.db.toolCall.findFirstOrThrow({ where: { runId, name: "refund_order" } })).status).toBe("SUCCEEDED");
    // The customer's question and the person's reply went into the transcript with the refund's result.
    expect(await h.transcriptProblems(conversationId)).toEqual([]);
    const queued = await h.db.message.findMany({ where: { conversationId, pendingDelivery: true } });
    expect(queued.map((m) => m.displayText)).toEqual([]);
    // The conversation is the agent's again: the customer's next message is answered, not queued.
    const next = await h.say("Thanks! Is that everything?", { conversationId });
    expect(next.phase).toBe("COMPLETED");
    expect(await h.db.message.findFirstOrThrow({ where: { conversationId, displayText: "Thanks! Is that everything?" } })).toMatchObject({
      pendingDelivery: false,
      inTranscript: true,
    });
  });
  it("the hand-back racing a supervisor's retry puts the run back once: one retry recorded, the other refused, the refund run once", async () => {
    const { takeOverConversation, handBackConversation } = await import("@/lib/conversations/takeover");
    const { retryDeadLetter } = await import("@/lib/runtime/retry-dead-letter");
    const { storeOf } = await import("@/lib/db/kysely");
    const { conversationId, runId } = await deadLetteredAfterApproval();
    const rita = { tenantId: h.staff.rita.tenantId, staffId: h.staff.rita.id };
    await takeOverConversation(h.db, rita, conversationId);
    const sol = h.staff.sol;
    const [back, retried] = await Promise.allSettled([
      handBackConversation(h.db, rita, conversationId),
      retryDeadLetter(storeOf(h.db), { tenantId: sol.tenantId, staffId: sol.id, role: "supervisor", email: sol.email }, runId),
    ]);
    // The hand-back always stands; the retry lost either way — to a person who still owned the conversation, or to a
    // run already put back.
    expect(back).toMatchObject({ status: "fulfilled", value: { runPutBack: true } });
    expect(retried.status).toBe("rejected");
    expect((retried as PromiseRejectedResult).reason).toMatchObject({ code: expect.stringMatching(/^(CONVERSATION_OWNED|CONFLICT)$/) });
    expect(await h.db.auditEvent.count({ where: { action: "run.retried", subject: runId } })).toBe(1);
    for (let i = 0; i < 4 && (await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase === "RUNNING"; i++) await tick();
    expect(await h.db.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ phase: "COMPLETED" });
    expect(await h.db.refund.count()).toBe(1);
    expect(await h.transcriptProblems(conversationId)).toEqual([]);
  });
});

describe("an edited approval judged again where it acts", () => {
  it("an edit refused above the ceiling where it acts is refused and escalated — never swapped back for the model's terms, nor left unrunnable", async () => {
    const { decideHandoff } = await import("@/lib/runtime/resume");
    const reply = (t: string) => ({ reply: { content: [{ type: "text" as const, text: t }], stop_reason: "end_turn" as const } });
    // The model asks for $300 on the lost A-1003 ($820): a person must approve it.
    h.script.push({
      parallel: [
        { id: "toolu_r300", name: "refund_order", input: { order_number: "A-1003", amount_cents: 30000, reason: "lost in transit" } },
      ],
    });
    const out = await h.say("My order A-1003 never arrived. Please refund the jacket part, $300.", { customer: "dana@example.com" });
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const handoff = out.handoffs[0]!;
    // Raj edits it to $350 (within his authority; one approver) — decided from a queue, continued by a worker.
    const edited = await decideHandoff(
      h.db,
      { tenantId: h.acme.id, staffId: h.staff.raj.id },
      { handoffId: handoff.id, decision: "edit", editedInput: { order_number: "A-1003", amount_cents: 35000, reason: "lost in transit" } },
    );
    expect(edited.kind).toBe("approved");
    // Before the worker runs it, $200 is refunded on A-1003 elsewhere (another tab's approved refund): $350 more would
    // pass the $500 ceiling.
    await h.db.order.updateMany({ where: { number: "A-1003" }, data: { refundedCents: 20000 } });
    h.script.push(reply("A person will review your refund."), reply("A person will review your refund."));
    for (let i = 0; i < 6; i++) await tick();

    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, toolUseId: "toolu_r300" } });
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    const state = { run: run.phase, outcome: run.outcome, call: call.status, result: call.result };
    // The reviewer's terms ($350) can no longer run: like two approvals that together pass the ceiling, the call is
    // refused where it acts and escalated (result.escalated), the model explains it — the run does not die on it.
    expect.soft(run.phase, JSON.stringify(state)).not.toBe("DEAD_LETTER");
    expect.soft(await h.transcriptProblems(out.conversationId), "transcript").toEqual([]);
    expect(call.status, JSON.stringify(state)).toBe("DENIED");
    expect(call.result).toMatchObject({ escalated: true });
  });
});

describe("an approval decided while the run is still running the other calls of its turn", () => {
  it("the approved call is not stranded: the run does not park for a decision that was already made", async () => {
    const pg = (await import("pg")).default;
    const { resumeRun } = await import("@/lib/runtime/resume");
    const reply = (t: string) => ({ reply: { content: [{ type: "text" as const, text: t }], stop_reason: "end_turn" as const } });
    // One turn: an automatic refund (runs in the tool phase) and a replacement a person must approve (parked with the
    // turn's statement — its handoff is in the queue while the refund is still running).
    h.script.push(
      {
        parallel: [
          { id: "toolu_refund", name: "refund_order", input: { order_number: "A-1001", amount_cents: 4250, reason: "zip broke" } },
          { id: "toolu_replace", name: "create_replacement", input: { order_number: "A-1003", reason: "lost in transit" } },
        ],
      },
      reply("Refunded $42.50 on A-1001, and the replacement for A-1003 is on its way."),
      reply("Refunded $42.50 on A-1001, and the replacement for A-1003 is on its way."),
    );
    // Another transaction holds A-1001 for a moment (a support agent's edit, another tab's refund): the refund waits.
    const other = new pg.Client({ connectionString: h.tdb.url });
    await other.connect();
    await other.query("BEGIN");
    await other.query(`SELECT id FROM "Order" WHERE number = 'A-1001' FOR UPDATE`);
    const otherPid = Number((await other.query("SELECT pg_backend_pid() AS pid")).rows[0].pid);
    // Backends of this database waiting for a lock held by `pid`.
    const blockedBy = async (pid: number) =>
      (
        await other.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND $1::int = ANY(pg_blocking_pids(pid))`, [
          pid,
        ])
      ).rows.map((r: { pid: number }) => Number(r.pid));
    const saying = h.say("Refund A-1001, the zip broke, and replace A-1003 please.", { customer: "dana@example.com" });
    let handoff: { id: string } | null = null;
    for (let i = 0; i < 200 && !handoff; i++) {
      const parked = await h.db.toolCall.findFirst({ where: { toolUseId: "toolu_replace" } });
      handoff = parked ? await h.db.handoff.findFirst({ where: { toolCallId: parked.id, kind: "APPROVAL", status: "PENDING" } }) : null;
      if (!handoff) await new Promise((r) => setTimeout(r, 25));
    }
    expect(handoff, "the replacement's approval is in the queue").not.toBeNull();
    // The refund's transaction (it holds the run's row) waits for A-1001.
    let effectPids: number[] = [];
    for (let i = 0; i < 400 && !effectPids.length; i++) {
      effectPids = await blockedBy(otherPid);
      if (!effectPids.length) await new Promise((r) => setTimeout(r, 25));
    }
    expect(effectPids, "the refund waits for A-1001").toHaveLength(1);
    // Raj approves it from the queue (the console's resumeRun) while the refund still runs.
    const deciding = resumeRun(h.deps, { tenantId: h.acme.id, staffId: h.staff.raj.id }, { handoffId: handoff!.id, decision: "approve" });
    // The decision waits for the run's row, which the refund's transaction holds.
    let deciderPids: number[] = [];
    for (let i = 0; i < 400 && !deciderPids.length; i++) {
      deciderPids = await blockedBy(effectPids[0]!);
      if (!deciderPids.length) await new Promise((r) => setTimeout(r, 25));
    }
    expect(deciderPids.length, "the decision waits for the run's row").toBeGreaterThan(0);
    await other.query("COMMIT");
    await other.end();
    const [said, decided] = await Promise.all([saying, deciding]);
    await runWorkerOnce(h.deps);

    const run = await h.db.run.findUniqueOrThrow({ where: { id: said.runId! } });
    const calls = await h.db.toolCall.findMany({ where: { runId: said.runId! }, orderBy: { position: "asc" } });
    const handoffs = await h.db.handoff.findMany({ where: { runId: said.runId! } });
    const state = {
      decided: decided.outcome.kind,
      run: run.phase,
      calls: calls.map((c) => [c.name, c.status]),
      handoffs: handoffs.map((x) => [x.kind, x.status]),
    };
    expect(decided.outcome.kind).toBe("approved");
    // Nothing is left waiting for a person (the only approval was given), so the run must not sit in
    // WAITING_FOR_APPROVAL: the approved replacement runs once and the customer is answered.
    expect.soft(run.phase, JSON.stringify(state)).not.toBe("WAITING_FOR_APPROVAL");
    expect(calls.find((c) => c.name === "create_replacement")?.status, JSON.stringify(state)).toBe("SUCCEEDED");
    expect((await h.effects()).map((e) => e.toolName).sort()).toEqual(["create_replacement", "refund_order"]);
  });
});
