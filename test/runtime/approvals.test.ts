import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness, roundTripsDuring, statementsSentDuring } from "../runtime-harness";
import { AppError } from "@/lib/errors";
import { decideHandoff, expireDueApprovals } from "@/lib/runtime/resume";
import { advanceConversationFrom, advanceRun, claimFor } from "@/lib/runtime/advance";
import { runWorkerOnce } from "@/lib/runtime/worker";
import { eventsSince } from "@/lib/events";
import { clearProviderFaults, injectProviderFault } from "@/lib/commerce/faults";
import { listHandoffs } from "@/lib/operator/commands";
import { captureLogLines } from "../log-lines";
import { refuseWrites } from "../refused-writes";
import { setStaffActive, updateStaff } from "@/lib/settings/staff";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const REFUND_A1002 = "Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.";

async function parkRefund() {
  const out = await h.say(REFUND_A1002);
  expect(out.phase).toBe("WAITING_FOR_APPROVAL");
  expect(out.handoffs).toHaveLength(1);
  return { out, handoff: out.handoffs[0]! };
}

/** A reviewer's approval that resumes the run for the decider (as the console does): the lease it took, and the outcome. */
async function approveForDecider(handoffId: string, staffId = h.staff.raj.id) {
  const claim = claimFor(h.deps);
  const decided = await decideHandoff(h.db, { tenantId: h.acme.id, staffId }, { handoffId, decision: "approve" }, { claimFor: claim });
  if (decided.kind !== "approved" || !decided.resumedWith) throw new Error("expected the run resumed for the decider");
  return { claim, decided, resumedWith: decided.resumedWith };
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe("parking at an approval", () => {
  it("parks a $250 refund with a self-contained handoff, runs nothing, and tells the customer honestly", async () => {
    const { out, handoff } = await parkRefund();
    expect(handoff).toMatchObject({
      kind: "APPROVAL",
      status: "PENDING",
      version: 1,
      toolName: "refund_order",
      amountCents: 25000,
      amount: "$250.00",
      proposedInput: { order_number: "A-1002", amount_cents: 25000 },
      customer: { email: "dana@example.com", name: "Dana Reyes" },
      rule: { gate: "refund_policy", policyVersion: 1 },
      requiredApprovals: 1,
    });
    expect(handoff.summary).toContain("A-1002");
    expect(handoff.rootCause).toMatch(/approval/);
    expect(handoff.recommendedAction).toMatch(/Refund \$250\.00 on A-1002/);
    expect(handoff.tried.join("\n")).toMatch(/Looked up order A-1002 — done/);
    expect(out.replies.map((r) => r.text).join(" ")).toMatch(/\$250\.00 refund for A-1002 is with our team/);
    expect(out.replies.map((r) => r.text).join(" ")).not.toMatch(/refunded/i);
    expect(await h.effects()).toHaveLength(0);
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(run.leaseOwner).toBeNull();
    // Live views learn the run waits for a person from the feed, in the same commit as the phase change.
    // (The feed shows an event once no older transaction is open on the server, in any database: other test files
    // run beside this one, so it may take a moment.)
    await expect
      .poll(
        async () =>
          (await eventsSince(h.db, { tenantId: h.acme.id, conversationId: out.conversationId }, 0n)).map((e) => [
            e.type,
            (e.data as { phase?: string }).phase,
          ]),
        { timeout: 10_000 },
      )
      .toContainEqual(["run.phase", "WAITING_FOR_APPROVAL"]);
    // What the next request needs is saved: the assistant message with the pending tool_use is the last one.
    const detail = await h.runDetail(out.runId!);
    const last = detail.transcript[detail.transcript.length - 1]!;
    expect((last.content as Array<{ type: string }>).some((b) => b.type === "tool_use")).toBe(true);
  });

  it("approve runs THAT call once, the model explains it, and budgets are not reset", async () => {
    const { out, handoff } = await parkRefund();
    const before = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    const requestsBefore = h.script.requests.length;
    const decided = await h.decide(handoff.id, "raj@acme.test", "approve", { version: 1 });
    expect(decided.outcome).toBe("approved");
    expect(decided.phase).toBe("COMPLETED");
    expect(decided.replies.map((r) => r.text).join(" ")).toMatch(/approved.*\$250\.00/i);
    const effects = await h.effects();
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatchObject({ toolName: "refund_order", outcome: expect.objectContaining({ amount_cents: 25000 }) });
    const after = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(after.turnsUsed).toBe(before.turnsUsed + 1); // one more model turn, counted on the same budget
    expect(after.maxTurns).toBe(before.maxTurns);
    // Approval did not ask the model to request the action again: the very next request carried the result.
    const next = h.script.requests[requestsBefore]!;
    const lastUser = next.messages[next.messages.length - 1]!;
    expect(JSON.stringify(lastUser.content)).toContain('\\"decision\\":\\"approved\\"');
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } });
    expect(order.refundedCents).toBe(25000);
  });

  it("a second approval of the same handoff is refused with ALREADY_DECIDED and no second effect", async () => {
    const { handoff } = await parkRefund();
    await h.decide(handoff.id, "raj@acme.test", "approve");
    const err = await refusal(h.decide(handoff.id, "ada@acme.test", "approve"));
    expect(err.code).toBe("ALREADY_DECIDED");
    expect(err.userMessage).toMatch(/Raj/);
    expect(await h.effects()).toHaveLength(1);
  });

  it("deny needs a reason, sends an is_error result the model explains, and executes nothing", async () => {
    const { out, handoff } = await parkRefund();
    expect((await refusal(h.decide(handoff.id, "raj@acme.test", "deny"))).code).toBe("INVALID_INPUT");
    const decided = await h.decide(handoff.id, "raj@acme.test", "deny", { reason: "Photos show wear, not transit damage" });
    expect(decided.outcome).toBe("denied");
    expect(decided.replies.map((r) => r.text).join(" ")).toMatch(/Photos show wear/);
    expect(await h.effects()).toHaveLength(0);
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call).toMatchObject({ status: "DENIED", isError: true });
    expect(call.result).toMatchObject({ error_category: "permission", is_retryable: false, review: { decision: "denied" } });
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("edit re-gates the new arguments, runs them under their own key, and the model is told what was done", async () => {
    const { out, handoff } = await parkRefund();
    const bad = await refusal(
      h.decide(handoff.id, "raj@acme.test", "edit", { input: { order_number: "A-1002", amount_cents: "lots", reason: "x" } }),
    );
    expect(bad.code).toBe("INVALID_INPUT");
    const over = await refusal(
      h.decide(handoff.id, "rita@acme.test", "edit", { input: { order_number: "A-1002", amount_cents: 26000, reason: "x" } }),
    );
    expect(over.code).toBe("GATE_DENIED"); // more than refundable
    const otherOrder = await refusal(
      h.decide(handoff.id, "raj@acme.test", "edit", { input: { order_number: "A-1001", amount_cents: 1000, reason: "x" } }),
    );
    expect(otherOrder.code).toBe("INVALID_INPUT");
    const decided = await h.decide(handoff.id, "raj@acme.test", "edit", {
      input: { order_number: "A-1002", amount_cents: 15000, reason: "partial: one item damaged" },
      version: 1,
    });
    expect(decided.outcome).toBe("approved");
    expect(decided.handoff.status).toBe("EDITED");
    expect(decided.replies.map((r) => r.text).join(" ")).toMatch(/\$150\.00/);
    const [effect] = await h.effects();
    expect(effect!.outcome).toMatchObject({ amount_cents: 15000 });
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call.input).toMatchObject({ amount_cents: 25000 }); // the model's call is kept as proposed
    expect(call.effectiveInput).toMatchObject({ amount_cents: 15000 });
    expect(call.result).toMatchObject({
      review: { decision: "edited", original_input: { amount_cents: 25000 }, executed_input: { amount_cents: 15000 } },
    });
    const gateRows = await h.db.gateDecision.findMany({ where: { toolCallId: call.id, actor: h.staff.raj.id } });
    expect(gateRows.length).toBeGreaterThan(0);
  });

  it("an expired approval resolves as its own outcome, not a denial", async () => {
    const { out, handoff } = await parkRefund();
    await h.db.handoff.update({ where: { id: handoff.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const late = await refusal(h.decide(handoff.id, "raj@acme.test", "approve"));
    expect(late.code).toBe("EXPIRED");
    await runWorkerOnce(h.deps);
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(run.phase).toBe("COMPLETED");
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call.status).toBe("EXPIRED");
    expect(call.result).toMatchObject({ review: { decision: "expired" } });
    expect(JSON.stringify(call.result)).not.toMatch(/denied/i);
    const replies = await h.db.message.findMany({ where: { conversationId: out.conversationId, author: "AGENT", shownToCustomer: true } });
    expect(replies.map((r) => r.displayText).join(" ")).toMatch(/expired/i);
    expect(await h.effects()).toHaveLength(0);
  });

  it("the worker expires due approvals on its own", async () => {
    const { handoff } = await parkRefund();
    await h.db.handoff.update({ where: { id: handoff.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await expireDueApprovals(h.deps)).toHaveLength(1);
    expect((await h.db.handoff.findUniqueOrThrow({ where: { id: handoff.id } })).status).toBe("EXPIRED");
  });
});

describe("an expiry that cannot be written", () => {
  const logLines = captureLogLines();

  it("a decision past the expiry whose expiry cannot be written is still refused as EXPIRED; the worker expires it later", async () => {
    const { out, handoff } = await parkRefund();
    await h.db.handoff.update({ where: { id: handoff.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const refused = await refuseWrites(h.db, {
      name: "refuse_expiry",
      op: "UPDATE",
      table: "Handoff",
      when: `NEW.status = 'EXPIRED'`,
      message: "this handoff cannot be expired (for the test)",
    });
    const late = await refusal(h.decide(handoff.id, "raj@acme.test", "approve"));
    // The reviewer is told what stands for their decision (too late), not the database's error about the expiry.
    expect(late.code).toBe("EXPIRED");
    expect(await refused.tries()).toBe(1);
    expect(
      logLines()
        .filter((l) => l.level === "error")
        .map((l) => [l.msg, l.handoffId]),
    ).toEqual([["expiring an approval past its expiry failed; it stays pending and a worker expires it", handoff.id]]);
    expect((await h.db.handoff.findUniqueOrThrow({ where: { id: handoff.id } })).status).toBe("PENDING");
    expect(await h.effects()).toHaveLength(0);
    await refused.stop();
    expect(await expireDueApprovals(h.deps)).toEqual([handoff.id]);
    await runWorkerOnce(h.deps);
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
    expect(await h.effects()).toHaveLength(0);
  });
});

describe("resuming for the decider", () => {
  it("the decision hands over what the run goes on from, read behind its COMMIT; the advance reads none of it again, nor the provider's record apart", async () => {
    const { out, handoff } = await parkRefund();
    const { claim, decided, resumedWith } = await approveForDecider(handoff.id);
    const { run, transcript, recordedCalls } = resumedWith;
    expect(run).toMatchObject({ id: out.runId, phase: "RUNNING" });
    const parked = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    // Read after the COMMIT: the call as the decision left it, and the tool_use message it belongs to, last.
    expect(recordedCalls?.calls.map((c) => [c.id, c.status])).toEqual([[parked.id, "APPROVED"]]);
    const last = transcript!.at(-1)!;
    expect(last.seq).toBe(recordedCalls!.seq);
    expect(JSON.stringify(last.content)).toContain(parked.toolUseId);

    const texts = await statementsSentDuring(async () => {
      const advanced = await advanceConversationFrom(h.deps, out.runId!, { claimedAs: claim, resumedWith: decided.resumedWith });
      expect(advanced.phase).toBe("COMPLETED");
    });
    const transcriptOrCallsRead =
      /^select [^;]* from "(Message" where "conversationId"|ToolCall" where "runId" = \$1 and "scope" is null)/i;
    expect(texts.filter((t) => transcriptOrCallsRead.test(t))).toEqual([]);
    expect(texts.length).toBeGreaterThan(3); // the effect's statements were seen
    // The provider's record under the call's key is read by the effect's first statement (the lease renewal), not apart.
    expect(texts.filter((t) => /^select "response" from "ProviderRequest"/i.test(t))).toEqual([]);
    expect(texts.filter((t) => /^UPDATE "Run"[\s\S]*FROM "ProviderRequest"/.test(t))).toHaveLength(1);
    expect(await h.effects()).toHaveLength(1);
  });
});

describe("an approved effect's writes", () => {
  it("the refund, the provider's record and the ledger row go on the wire with the statement that records the outcome, and its COMMIT", async () => {
    const { out, handoff } = await parkRefund();
    const { claim, decided } = await approveForDecider(handoff.id);
    const sent = await roundTripsDuring(async () => {
      const advanced = await advanceConversationFrom(h.deps, out.runId!, { claimedAs: claim, resumedWith: decided.resumedWith });
      expect(advanced.phase).toBe("COMPLETED");
    });
    const tripOf = (re: RegExp) => {
      const found = sent.filter((s) => re.test(s.text));
      expect(found, String(re)).toHaveLength(1);
      return found[0]!.trip;
    };
    const refund = tripOf(/insert into "Refund"/i);
    expect(tripOf(/insert into "ProviderRequest"/i)).toBe(refund);
    // The step that records the call's outcome (its tool_result), fenced by the lease, and the transaction's COMMIT.
    const outcome = sent.findIndex((s) => /^WITH lease AS/.test(s.text) && s.trip === refund);
    expect(outcome).toBeGreaterThan(sent.findIndex((s) => /insert into "ProviderRequest"/i.test(s.text)));
    expect(sent[outcome + 1]).toEqual({ text: "commit", trip: refund });
    // The order is read, under its row lock, by the effect's first statement (the lease renewal): no round trip of
    // its own between that one and the writes.
    const renewal = sent.find((s) => /^UPDATE "Run"[\s\S]*FROM "ProviderRequest"/.test(s.text))!;
    expect(renewal.text).toMatch(/FROM "Order" o WHERE [\s\S]*FOR UPDATE OF o/);
    expect(sent.filter((s) => /FROM "Order" o WHERE/.test(s.text))).toHaveLength(1);
    expect(refund - renewal.trip).toBe(1);
    const effects = await h.effects();
    expect(effects).toHaveLength(1);
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } });
    const refunds = await h.db.refund.findMany({ where: { orderId: order.id } });
    expect(refunds.map((r) => r.amountCents)).toEqual([order.refundedCents]);
    // The refund's id in the tool's result is the row's.
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect((call.result as { refund_id?: string }).refund_id).toBe(refunds[0]!.id);
  });

  it("a cancellation and a replacement too: the order read with the renewal, their writes with the outcome and its COMMIT", async () => {
    /**
     * The round trips of the effect's transaction: the renewal's, then the one carrying `writes`, the outcome and COMMIT.
     * An automatic money call (`judgedAgain`) has one more between them: the customer's lock and its totals as done
     * (lib/runtime/judged-again).
     */
    const expectTrips = (sent: Array<{ text: string; trip: number }>, writes: RegExp[], judgedAgain = false) => {
      const renewal = sent.find((s) => /^UPDATE "Run"[\s\S]*FROM "ProviderRequest"/.test(s.text))!;
      expect(renewal.text).toMatch(/FOR UPDATE OF o/);
      const last = renewal.trip + (judgedAgain ? 2 : 1);
      if (judgedAgain)
        expect(sent.filter((s) => s.trip === renewal.trip + 1).map((s) => s.text.slice(0, 40))).toEqual([
          expect.stringMatching(/pg_advisory_xact_lock/),
          expect.stringMatching(/^\s*SELECT o."customerId"/),
        ]);
      for (const w of [...writes, /insert into "ProviderRequest"/i])
        expect(
          sent.filter((s) => w.test(s.text)).map((s) => s.trip),
          String(w),
        ).toEqual([last]);
      expect(sent.filter((s) => s.trip === last).at(-1)?.text).toBe("commit");
      expect(sent.filter((s) => /FOR UPDATE OF o/.test(s.text))).toEqual([renewal]); // the order's locked read: none apart
    };
    const sam = { customer: "sam@example.com" };
    const out = await h.say("Please cancel order A-2001, I ordered the wrong size.", sam);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const { claim, decided } = await approveForDecider(out.handoffs[0]!.id, h.staff.rita.id);
    const cancelled = await roundTripsDuring(() =>
      advanceConversationFrom(h.deps, out.runId!, { claimedAs: claim, resumedWith: decided.resumedWith }),
    );
    expectTrips(cancelled, [/^update "Order" set "status"/i, /^insert into "Refund"/i]);
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-2001" } });
    expect(order).toMatchObject({ status: "cancelled", refundedCents: order.totalCents });
    expect((await h.db.refund.findMany({ where: { orderId: order.id } })).map((r) => r.amountCents)).toEqual([order.totalCents]);

    const replaced = await roundTripsDuring(() => h.say("Order A-2003 arrived broken, can you send me a replacement for A-2003?", sam));
    expectTrips(replaced, [/^insert into "Shipment"/i], true);
    const a2003 = await h.db.order.findFirstOrThrow({ where: { number: "A-2003" }, include: { shipments: true } });
    expect(a2003.shipments.filter((s) => s.kind === "replacement")).toHaveLength(1);
    expect(await h.effects()).toHaveLength(2);
  });

  it("a write that went with the outcome and failed is the tool's failure: nothing of the effect stands, and the model is told", async () => {
    const { out, handoff } = await parkRefund();
    const parked = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } });
    // A refund already recorded under the call's key (as if written outside the runtime): the deferred insert fails.
    await h.db.refund.create({
      data: { tenantId: h.acme.id, orderId: order.id, amountCents: 1, reason: "stray", idempotencyKey: parked.idempotencyKey! },
    });
    const { claim, decided } = await approveForDecider(handoff.id);
    const advanced = await advanceConversationFrom(h.deps, out.runId!, { claimedAs: claim, resumedWith: decided.resumedWith });
    expect(advanced.phase).toBe("COMPLETED");
    const call = await h.db.toolCall.findUniqueOrThrow({ where: { id: parked.id } });
    expect(call).toMatchObject({ status: "FAILED", isError: true });
    expect(call.result).toMatchObject({ error_category: "system", is_retryable: false });
    expect(await h.effects()).toHaveLength(0);
    expect(await h.db.providerRequest.count()).toBe(0);
    expect((await h.db.order.findUniqueOrThrow({ where: { id: order.id } })).refundedCents).toBe(order.refundedCents);
  });
});

describe("who may decide", () => {
  it("refuses a reviewer over their authority, and another tenant's reviewer sees not found", async () => {
    const out = await h.say("I'm dana@example.com, order A-1004. I want my money back for A-1004, please refund it.");
    const handoff = out.handoffs[0]!;
    expect(handoff.amountCents).toBe(46000);
    expect(handoff.requiredApprovals).toBe(2);
    expect((await refusal(h.decide(handoff.id, "rita@acme.test", "approve"))).code).toBe("OVER_AUTHORITY");
    expect((await refusal(h.decide(handoff.id, "gus@globex.test", "approve"))).code).toBe("NOT_FOUND");
    expect((await refusal(h.decide(handoff.id, "nobody@acme.test", "approve"))).code).toBe("FORBIDDEN");
    expect((await refusal(h.decide("does-not-exist", "raj@acme.test", "approve"))).code).toBe("NOT_FOUND");
    expect((await refusal(h.decide(handoff.id, "raj@acme.test", "maybe"))).code).toBe("INVALID_INPUT");
    expect(await h.effects()).toHaveLength(0);
    const unchanged = await h.db.handoff.findUniqueOrThrow({ where: { id: handoff.id } });
    expect(unchanged).toMatchObject({ status: "PENDING", version: 1 });
  });

  it("four eyes: two distinct approvers, the same person cannot be both, a stale version is refused", async () => {
    const out = await h.say("I'm dana@example.com, order A-1004. Please refund A-1004, it's not what I ordered.");
    const handoff = out.handoffs[0]!;
    const first = await h.decide(handoff.id, "raj@acme.test", "approve", { version: 1 });
    expect(first.outcome).toBe("awaiting_second_approval");
    expect(first.handoff).toMatchObject({ status: "PENDING", version: 2 });
    expect(await h.effects()).toHaveLength(0);
    expect((await refusal(h.decide(handoff.id, "raj@acme.test", "approve", { version: 2 }))).code).toBe("SAME_APPROVER");
    expect((await refusal(h.decide(handoff.id, "ada@acme.test", "approve", { version: 1 }))).code).toBe("STALE_VERSION");
    const second = await h.decide(handoff.id, "ada@acme.test", "approve", { version: 2 });
    expect(second.outcome).toBe("approved");
    expect(second.phase).toBe("COMPLETED");
    expect(await h.effects()).toHaveLength(1);
    expect((await h.db.handoffApproval.findMany({ where: { handoffId: handoff.id } })).length).toBe(2);
  });
});

// Four eyes hold for what runs: an edit is judged by the approval bands too (not only by the editor's authority),
// and an approval counts only for the terms it was given for.
describe("an edit judged under the run's policy", () => {
  it("a reviewer's edit of a parked call is re-gated under the run's policy version, not the one published since", async () => {
    const out = await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const handoff = out.handoffs[0]!;
    const runVersion = (await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).policyVersion;
    // After the run parked, the admin lowers the refusal ceiling to $200.
    await h.publish((r) => ({
      ...r,
      refund: { ...r.refund, autoMaxCents: 10000, twoApproversFromCents: 15000, approvalMaxCents: 20000 },
    }));
    expect((await h.db.tenant.findUniqueOrThrow({ where: { id: h.acme.id } })).policyVersion).not.toBe(runVersion);
    // Raj (authority $1,000) trims the refund to $240: inside the run's version's band ($100–$500, one approver).
    const decided = await h.decide(handoff.id, "raj@acme.test", "edit", {
      input: { order_number: "A-1002", amount_cents: 24000, reason: "partial" },
      version: 1,
    });
    expect(decided).toMatchObject({ outcome: "approved" });
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    const rows = await h.db.gateDecision.findMany({ where: { toolCallId: call.id, actor: h.staff.raj.id } });
    expect(rows.length).toBeGreaterThan(0);
    expect(new Set(rows.map((r) => r.policyVersion))).toEqual(new Set([runVersion]));
  });
});

describe("four eyes and edits", () => {
  const refundA1004 = (amount_cents: number) => ({
    reply: {
      content: [
        { type: "tool_use" as const, name: "refund_order", input: { order_number: "A-1004", amount_cents, reason: "not what I ordered" } },
      ],
      stop_reason: "tool_use",
    },
  });
  const endTurn = (text: string) => ({ reply: { content: [{ type: "text" as const, text }], stop_reason: "end_turn" } });
  const refunded = async () => (await h.db.order.findFirstOrThrow({ where: { number: "A-1004" } })).refundedCents;
  const approvers = async (handoffId: string) =>
    (await h.db.handoffApproval.findMany({ where: { handoffId } })).map((a) => a.staffId).sort();
  const DANA = { customer: "dana@example.com" };

  it("an edit that raises a one-approver refund into the two-approver band waits for a second, different person", async () => {
    h.script.push(refundA1004(30000)); // $300 of $460: over the automatic limit, under the four-eyes threshold ($400)
    const out = await h.say("refund $300 of A-1004 please", DANA);
    const handoff = out.handoffs[0]!;
    expect(handoff.requiredApprovals).toBe(1);

    const first = await h.decide(handoff.id, "raj@acme.test", "edit", {
      input: { order_number: "A-1004", amount_cents: 46000, reason: "full refund" },
      version: 1,
    });
    expect(first.outcome).toBe("awaiting_second_approval");
    expect(first.handoff).toMatchObject({ status: "PENDING", requiredApprovals: 2, amountCents: 46000 });
    expect(await refunded()).toBe(0);
    expect(await h.effects()).toHaveLength(0);
    expect((await refusal(h.decide(handoff.id, "raj@acme.test", "approve", { version: 2 }))).code).toBe("SAME_APPROVER");

    h.script.push(endTurn("Refunded $460.00 on A-1004."));
    const second = await h.decide(handoff.id, "ada@acme.test", "approve", { version: 2 });
    expect(second.outcome).toBe("approved");
    expect(await refunded()).toBe(46000); // Raj's edit, approved by Ada: what both saw
    expect(await h.effects()).toHaveLength(1);
    expect(await approvers(handoff.id)).toEqual([h.staff.ada.id, h.staff.raj.id].sort());
  });

  it("a second approver who changes the terms voids the first approval: the new terms need another person's", async () => {
    h.script.push(refundA1004(40000)); // $400: two approvers
    const out = await h.say("refund $400 of A-1004 please", DANA);
    const handoff = out.handoffs[0]!;
    expect(handoff.requiredApprovals).toBe(2);
    expect((await h.decide(handoff.id, "raj@acme.test", "approve", { version: 1 })).outcome).toBe("awaiting_second_approval");

    // Ada edits it to $460, which Raj never approved: hers is now the first approval of $460, Raj's no longer counts.
    const edited = await h.decide(handoff.id, "ada@acme.test", "edit", {
      input: { order_number: "A-1004", amount_cents: 46000, reason: "full refund" },
      version: 2,
    });
    expect(edited.outcome).toBe("awaiting_second_approval");
    expect(edited.handoff).toMatchObject({ status: "PENDING", requiredApprovals: 2, amountCents: 46000 });
    expect(await refunded()).toBe(0);
    expect(await approvers(handoff.id)).toEqual([h.staff.ada.id]);
    const voided = await h.db.auditEvent.findFirstOrThrow({
      where: { subject: handoff.id, action: "handoff.first_approval", actor: "ada@acme.test" },
    });
    expect(voided.data).toMatchObject({ edited: true, voidedApprovals: ["Raj"] });

    // Raj may now approve the new terms: two people approved $460.
    h.script.push(endTurn("Refunded $460.00 on A-1004."));
    const done = await h.decide(handoff.id, "raj@acme.test", "approve", { version: 3 });
    expect(done.outcome).toBe("approved");
    expect(await refunded()).toBe(46000);
    expect(await h.effects()).toHaveLength(1);
    expect(await approvers(handoff.id)).toEqual([h.staff.ada.id, h.staff.raj.id].sort());
  });

  it("a second approver who edits back to the model's call: those are the terms that wait, and that run", async () => {
    h.script.push(refundA1004(40000)); // $400: two approvers
    const out = await h.say("refund $400 of A-1004 please", DANA);
    const handoff = out.handoffs[0]!;
    const first = await h.decide(handoff.id, "raj@acme.test", "edit", {
      input: { order_number: "A-1004", amount_cents: 38000, reason: "not what I ordered" },
      version: 1,
    });
    expect(first.handoff).toMatchObject({ status: "PENDING", amountCents: 38000 });
    // Ada puts the model's $400 back: Raj approved $380, not this — and $400 is what waits now.
    const back = await h.decide(handoff.id, "ada@acme.test", "edit", {
      input: { order_number: "A-1004", amount_cents: 40000, reason: "not what I ordered" },
      version: 2,
    });
    expect(back.outcome).toBe("awaiting_second_approval");
    expect(back.handoff).toMatchObject({ status: "PENDING", amountCents: 40000 });
    expect(await approvers(handoff.id)).toEqual([h.staff.ada.id]);
    h.script.push(endTurn("Refunded $400.00 on A-1004."));
    const done = await h.decide(handoff.id, "raj@acme.test", "approve", { version: 3 });
    expect(done.outcome).toBe("approved");
    expect(await refunded()).toBe(40000); // what Ada and then Raj approved
  });

  it("a second approver's edit that keeps the terms completes the four eyes, and an edit down keeps the two required", async () => {
    h.script.push(refundA1004(45000)); // $450: two approvers
    const out = await h.say("refund $450 of A-1004 please", DANA);
    const handoff = out.handoffs[0]!;
    // Raj edits it down to $350 and approves: still two approvers, as the item was raised.
    const first = await h.decide(handoff.id, "raj@acme.test", "edit", {
      input: { order_number: "A-1004", amount_cents: 35000, reason: "not what I ordered" },
      version: 1,
    });
    expect(first.outcome).toBe("awaiting_second_approval");
    expect(first.handoff).toMatchObject({ requiredApprovals: 2, amountCents: 35000 });
    // Ada "edits" to the very same terms: that is an approval of what Raj approved.
    h.script.push(endTurn("Refunded $350.00 on A-1004."));
    const second = await h.decide(handoff.id, "ada@acme.test", "edit", {
      input: { order_number: "A-1004", amount_cents: 35000, reason: "not what I ordered" },
      version: 2,
    });
    expect(second.outcome).toBe("approved");
    expect(await refunded()).toBe(35000);
    expect(await approvers(handoff.id)).toEqual([h.staff.ada.id, h.staff.raj.id].sort());
  });
});

describe("an approver who loses access or authority before the approved call runs", () => {
  // The decision commits; the run is continued later (here: by a worker), when the effect checks its approver again.
  async function approveThenChange(change: (rajId: string) => Promise<unknown>) {
    const { out, handoff } = await parkRefund();
    await decideHandoff(h.db, { tenantId: h.acme.id, staffId: h.staff.raj.id }, { handoffId: handoff.id, decision: "approve" });
    await change(h.staff.raj.id);
    const advanced = await advanceRun(h.newDeps("later-worker"), out.runId!);
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } });
    return { advanced, call, order };
  }

  it("a deactivated approver: the refund does not run, the call fails with a permission error", async () => {
    const { advanced, call, order } = await approveThenChange((id) =>
      h.db.staffUser.update({ where: { id }, data: { deactivatedAt: new Date() } }),
    );
    expect(advanced.claimed).toBe(true);
    expect(call.status).toBe("FAILED");
    expect(call.result).toMatchObject({ error_category: "permission", message: expect.stringMatching(/no longer has access/) });
    expect(await h.effects()).toHaveLength(0);
    expect(order.refundedCents).toBe(0);
  });

  it("an authority lowered below the amount: the refund does not run", async () => {
    const { call, order } = await approveThenChange((id) => h.db.staffUser.update({ where: { id }, data: { authorityLimitCents: 10000 } }));
    expect(call.status).toBe("FAILED");
    expect(call.result).toMatchObject({
      error_category: "permission",
      message: expect.stringMatching(/\$100\.00\) no longer covers \$250\.00/),
    });
    expect(await h.effects()).toHaveLength(0);
    expect(order.refundedCents).toBe(0);
  });

  it("an approver whose authority still covers it: the refund runs once", async () => {
    const { call, order } = await approveThenChange((id) => h.db.staffUser.update({ where: { id }, data: { authorityLimitCents: 25000 } }));
    expect(call.status).toBe("SUCCEEDED");
    expect(await h.effects()).toHaveLength(1);
    expect(order.refundedCents).toBe(25000);
  });

  it("a refund that already happened (its answer lost) is reported as done on the retry, though the approver left meanwhile", async () => {
    const before = process.env.SUPPORT_RETRY_BASE_MS;
    process.env.SUPPORT_RETRY_BASE_MS = "1";
    clearProviderFaults();
    try {
      const { out, handoff } = await parkRefund();
      injectProviderFault("refund_order", "timeout_after_commit", 1); // the provider acted; its answer never came
      await h.decide(handoff.id, "raj@acme.test", "approve");
      const waiting = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
      expect(waiting.status).toBe("RETRY_WAIT");
      expect(await h.effects()).toHaveLength(1); // the refund happened

      await h.db.staffUser.update({ where: { id: h.staff.raj.id }, data: { deactivatedAt: new Date() } });
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 20));
        await runWorkerOnce(h.deps);
      }
      const call = await h.db.toolCall.findFirstOrThrow({ where: { id: waiting.id } });
      // The money moved and the ledger says so: the retry replays that outcome — never "nothing was done".
      expect({ status: call.status, result: call.result }).toMatchObject({
        status: "SUCCEEDED",
        result: { status: "refunded", replayed: true },
      });
      expect(await h.db.refund.count()).toBe(1);
      expect(await h.effects()).toHaveLength(1);
    } finally {
      clearProviderFaults();
      if (before === undefined) delete process.env.SUPPORT_RETRY_BASE_MS;
      else process.env.SUPPORT_RETRY_BASE_MS = before;
    }
  });
});

// Four eyes count people who may still approve: an approval stands while its approver is active in the shop and
// their authority covers the amount — when the second approval comes, and again when the approved call runs.
describe("four eyes: an approval stands while its approver may still give it", () => {
  const A1004 = "I'm dana@example.com, order A-1004. Please refund A-1004, it's not what I ordered.";
  const admin = () => ({ tenantId: h.acme.id, staffId: h.staff.ada.id });
  const refundedA1004 = async () => (await h.db.order.findFirstOrThrow({ where: { number: "A-1004" } })).refundedCents;

  async function firstApprovalBy(email: string) {
    const out = await h.say(A1004);
    const handoff = out.handoffs[0]!;
    expect(handoff).toMatchObject({ amountCents: 46000, requiredApprovals: 2 });
    expect((await h.decide(handoff.id, email, "approve")).outcome).toBe("awaiting_second_approval");
    return { out, handoff };
  }

  it("an approver deactivated by an admin: their approval is withdrawn, the next one is a first approval again", async () => {
    const { handoff } = await firstApprovalBy("raj@acme.test");
    await setStaffActive(h.db, admin(), { staffId: h.staff.raj.id, active: false });
    expect(await h.db.handoffApproval.count({ where: { handoffId: handoff.id } })).toBe(0);
    const withdrawn = await h.db.auditEvent.findFirstOrThrow({ where: { action: "handoff.approval_withdrawn", subject: handoff.id } });
    expect(withdrawn.data).toMatchObject({ staffId: h.staff.raj.id, why: "deactivated" });
    const second = await h.decide(handoff.id, "sol@acme.test", "approve");
    expect(second.outcome).toBe("awaiting_second_approval");
    expect(await h.effects()).toHaveLength(0);
    expect(await refundedA1004()).toBe(0);
    // Two people who may approve it still complete it.
    expect((await h.decide(handoff.id, "ada@acme.test", "approve")).outcome).toBe("approved");
    expect(await refundedA1004()).toBe(46000);
  });

  it("an approver whose authority an admin lowers below the amount: their approval is withdrawn", async () => {
    const { handoff } = await firstApprovalBy("raj@acme.test");
    await updateStaff(h.db, admin(), { staffId: h.staff.raj.id, role: "reviewer", authorityLimitCents: 10000 });
    expect(await h.db.handoffApproval.count({ where: { handoffId: handoff.id } })).toBe(0);
    expect((await h.decide(handoff.id, "sol@acme.test", "approve")).outcome).toBe("awaiting_second_approval");
    expect(await h.effects()).toHaveLength(0);
    expect(await refundedA1004()).toBe(0);
  });

  it("an authority lowered but still covering the amount, and another item's approvals: untouched", async () => {
    const { handoff } = await firstApprovalBy("raj@acme.test");
    await updateStaff(h.db, admin(), { staffId: h.staff.raj.id, role: "reviewer", authorityLimitCents: 46000 });
    expect(await h.db.handoffApproval.count({ where: { handoffId: handoff.id } })).toBe(1);
    expect((await h.decide(handoff.id, "sol@acme.test", "approve")).outcome).toBe("approved");
    expect(await refundedA1004()).toBe(46000);
  });

  it("an approver deactivated in the database itself (not through the settings): the approval no longer counts", async () => {
    const { handoff } = await firstApprovalBy("raj@acme.test");
    await h.db.staffUser.update({ where: { id: h.staff.raj.id }, data: { deactivatedAt: new Date() } });
    expect((await h.decide(handoff.id, "sol@acme.test", "approve")).outcome).toBe("awaiting_second_approval");
    expect(await h.effects()).toHaveLength(0);
    expect(await refundedA1004()).toBe(0);
    // The two whose approvals stand complete it, and the record names them.
    expect((await h.decide(handoff.id, "ada@acme.test", "approve")).outcome).toBe("approved");
    expect(await refundedA1004()).toBe(46000);
    const call = await h.db.toolCall.findFirstOrThrow({ where: { name: "refund_order" } });
    expect(call.review).toMatchObject({ decision: "approved", by: "Sol and Ada" });
  });

  it("both approved, then the first approver deactivated before the run continues: the refund does not run", async () => {
    const { out, handoff } = await firstApprovalBy("raj@acme.test");
    await decideHandoff(h.db, { tenantId: h.acme.id, staffId: h.staff.sol.id }, { handoffId: handoff.id, decision: "approve" });
    await h.db.staffUser.update({ where: { id: h.staff.raj.id }, data: { deactivatedAt: new Date() } });
    await advanceRun(h.newDeps("later-worker"), out.runId!);
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId: out.runId!, name: "refund_order" } });
    expect(call.status).toBe("FAILED");
    expect(call.result).toMatchObject({
      error_category: "permission",
      message: expect.stringMatching(/Of the 2 approvals it needed, 1 still stand/),
    });
    expect(await h.effects()).toHaveLength(0);
    expect(await refundedA1004()).toBe(0);
  });
});

describe("a customer who keeps writing while a call is parked", () => {
  it("is answered honestly, the transcript stays valid, and the text reaches the model right after the results", async () => {
    const { out, handoff } = await parkRefund();
    const requests = h.script.requests.length;
    const more = await h.say("Also, where is my order A-1001?", { conversationId: out.conversationId });
    expect(more.queued).toBe(true);
    expect(more.replies.map((r) => r.text).join(" ")).toMatch(/\$250\.00 refund for A-1002 is still with our team/);
    // Nothing was sent to the model while parked: a request now would carry a tool_use without its result.
    expect(h.script.requests.length).toBe(requests);
    await h.decide(handoff.id, "raj@acme.test", "approve");
    const resumed = h.script.requests[requests]!;
    const lastUser = resumed.messages[resumed.messages.length - 1]!;
    const blocks = lastUser.content as Array<{ type: string; text?: string }>;
    expect(blocks[0]!.type).toBe("tool_result");
    // The customer's words, framed as they were at intake: data, never instructions.
    expect(blocks[blocks.length - 1]).toMatchObject({
      type: "text",
      text: "<customer_message>\nAlso, where is my order A-1001?\n</customer_message>",
    });
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
    const replies = await h.db.message.findMany({ where: { conversationId: out.conversationId, author: "AGENT", shownToCustomer: true } });
    expect(replies.map((r) => r.displayText).join(" ")).toMatch(/A-1001/);
  });
});

// The operator's `say` (CLI, benches, tests) answers with the conversation's pending handoffs — read for that
// conversation only. It used to list every handoff of the shop and filter them in memory: a shop with many thousands
// of handoffs paid for all of them, with their approvals and calls, on every message.
describe("say: the conversation's pending handoffs", () => {
  it("lists this conversation's pending handoff, never another conversation's", async () => {
    const { out } = await parkRefund();
    expect(out.handoffs[0]!.conversationId).toBe(out.conversationId);

    const other = await h.say("hello");
    expect(other.conversationId).not.toBe(out.conversationId);
    expect(other.handoffs).toEqual([]);
  });

  it("reads the shop's handoffs for this conversation only, filtered by the database", async () => {
    await parkRefund();
    const texts = await statementsSentDuring(() => h.say("hello"));
    const handoffReads = texts.filter((t) => /^select [\s\S]* from "public"\."Handoff"/i.test(t));
    expect(handoffReads).toHaveLength(1);
    expect(handoffReads[0]).toMatch(/"Handoff"\."conversationId" = \$\d+/);
    expect(handoffReads[0]).toMatch(/"Handoff"\."status" = /);
  });

  it("listHandoffs narrows to one conversation on request, the other filters still applying", async () => {
    const { out, handoff } = await parkRefund();
    const other = await h.say("hello");
    const decided = await h.decide(handoff.id, "raj@acme.test", "deny", { reason: "not this time" });
    expect(decided.handoff.status).toBe("DENIED");

    const ofParked = await listHandoffs(h.db, h.acme.id, { conversationId: out.conversationId });
    expect(ofParked.map((x) => x.id)).toEqual([handoff.id]);
    expect(await listHandoffs(h.db, h.acme.id, { conversationId: out.conversationId, status: "pending" })).toEqual([]);
    expect(await listHandoffs(h.db, h.acme.id, { conversationId: other.conversationId })).toEqual([]);
  });
});
