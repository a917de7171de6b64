import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_POLICY_RULES } from "@/lib/setup/seed";
import { AppError } from "@/lib/errors";
import { type PolicyRules, type PolicyRulesInput, policyRulesSchema } from "@/lib/policy/policy";
import { createHarness, type Harness } from "@/test/runtime-harness";
import { compareWithDraft, type RecordedCall, recordedCalls, WHAT_IF_PAGE_SIZE, whatIf } from "./what-if";

const V1 = policyRulesSchema.parse(DEMO_POLICY_RULES);
/** The draft: automatic refunds to $80, two approvers from $300, refused above $400; cancellations run by
 * themselves; replacements automatic to $100; addresses may change while shipped too. */
const DRAFT: PolicyRules = {
  ...V1,
  refund: { ...V1.refund, autoMaxCents: 8000, twoApproversFromCents: 30000, approvalMaxCents: 40000 },
  replacement: { ...V1.replacement, autoMaxCents: 10000 },
  cancellation: { requiresApproval: false },
  addressChange: { allowedStatuses: ["processing", "shipped"] },
};

let n = 0;
/** A call as the runtime records it under v1: the decision it got and the latest round of gate decisions. */
function call(
  toolName: string,
  facts: RecordedCall["facts"],
  decision: RecordedCall["decision"],
  records: RecordedCall["records"],
  requiredApprovals: number | null = null,
): RecordedCall {
  n++;
  return {
    id: `call${n}`,
    runId: `run${n}`,
    toolName,
    input: facts.orderNumber ? { order_number: facts.orderNumber, amount_cents: facts.amountCents } : {},
    facts,
    decision,
    requiredApprovals,
    records,
    policyVersion: 1,
    createdAt: new Date(Date.UTC(2026, 10, 30, 12, 0, 60 - n)),
  };
}
const NO_TOTALS = {
  orderDoneCents: 0,
  orderPendingCents: 0,
  sameTurnCents: 0,
  customerAutoCents: 0,
  customerPendingAutoCents: 0,
  windowDays: 30,
};
const refund = (cents: number, totals: Partial<typeof NO_TOTALS> = {}) => ({
  orderNumber: `A-${cents}`,
  amountCents: cents,
  orderStatus: "delivered",
  refundableCents: 100_000,
  totals: { ...NO_TOTALS, ...totals },
  summary: `Refund ${cents}`,
});
const r = (gate: string, decision: RecordedCall["records"][number]["decision"]) => ({ gate, decision, reason: `${gate} said ${decision}` });

// Newest first, as the query returns them.
const CALLS: RecordedCall[] = [
  call("refund_order", refund(5000), "allow", [r("refund_policy", "allow")]), // stays automatic
  call("refund_order", refund(9000), "allow", [r("refund_policy", "allow")]), // → approval
  call("refund_order", refund(25000), "ask", [r("refund_policy", "ask")], 1), // stays approval
  call("refund_order", refund(45000), "ask", [r("refund_policy", "ask")], 2), // two approvers → refused
  call("refund_order", refund(35000), "ask", [r("refund_policy", "ask")], 1), // one approver → two
  call("refund_order", refund(60000), "deny", [r("refund_policy", "deny")]), // stays refused
  // Not verified at the time: refused whatever the policy says (verification is not judged again).
  call("refund_order", refund(9500), "deny", [r("verified_customer", "deny"), r("refund_policy", "allow")]),
  call(
    "cancel_order",
    { orderNumber: "A-2001", amountCents: 12900, orderStatus: "processing", summary: "Cancel" },
    "ask",
    [r("cancellation_policy", "ask")],
    1,
  ), // → automatic
  call("lookup_order", { summary: "lookup_order" }, "allow", []), // stays automatic
  call(
    "create_replacement",
    { orderNumber: "A-1", amountCents: 15000, orderStatus: "delivered", totals: NO_TOTALS, summary: "Replace" },
    "allow",
    [r("replacement_policy", "allow")],
  ), // → approval
  call("update_shipping_address", { orderNumber: "A-2", orderStatus: "shipped", summary: "Address" }, "deny", [
    r("address_change_policy", "deny"),
  ]), // → automatic
];

describe("what-if on a hand-built set of calls", () => {
  it("replayed under the rules they were decided by, nothing changes (the replay mirrors the runtime)", () => {
    const same = compareWithDraft(CALLS, V1);
    expect(same.changed.total).toBe(0);
    expect(same.transitions).toEqual([]);
    expect(same.after).toEqual(same.before);
  });

  it("counts before and after, the money in each, the two-approver share and the moves — exactly", () => {
    const report = compareWithDraft(CALLS, DRAFT);
    expect(report.total).toBe(11);
    expect(report.before).toEqual({
      automatic: { count: 4, amountCents: 5000 + 9000 + 15000 },
      approval: { count: 4, amountCents: 25000 + 45000 + 35000 + 12900 },
      refused: { count: 3, amountCents: 60000 + 9500 },
      deferred: { count: 0, amountCents: 0 },
    });
    expect(report.after).toEqual({
      automatic: { count: 4, amountCents: 5000 + 12900 },
      approval: { count: 4, amountCents: 9000 + 25000 + 35000 + 15000 },
      refused: { count: 3, amountCents: 45000 + 60000 + 9500 },
      deferred: { count: 0, amountCents: 0 },
    });
    expect(report.twoApprovers).toEqual({ before: { count: 1, amountCents: 45000 }, after: { count: 1, amountCents: 35000 } });
    const moves = report.transitions.map((t) => [
      `${t.from.outcome}/${t.from.approvers}`,
      `${t.to.outcome}/${t.to.approvers}`,
      t.count,
      t.amountCents,
    ]);
    expect(moves).toEqual([
      ["automatic/0", "approval/1", 2, 9000 + 15000],
      ["approval/2", "refused/0", 1, 45000],
      ["approval/1", "approval/2", 1, 35000],
      ["approval/1", "automatic/0", 1, 12900],
      ["refused/0", "automatic/0", 1, 0],
    ]);
    expect(report.changed.total).toBe(6);
    expect(report.changed.calls.map((c) => c.toolCallId)).toEqual(["call2", "call4", "call5", "call8", "call10", "call11"]);
    expect(report.changed.calls[0]).toMatchObject({
      runId: "run2",
      was: { outcome: "automatic" },
      now: { outcome: "approval", approvers: 1 },
    });
    expect(report.changed.calls[0]!.reason).toBe(
      "A person's approval is needed: a refund of $90.00 on A-9000 is over the automatic limit of $80.00.",
    );
    expect(report.byTool.find((t) => t.toolName === "refund_order")).toEqual({
      toolName: "refund_order",
      before: { automatic: 2, approval: 3, refused: 2, deferred: 0 },
      after: { automatic: 1, approval: 3, refused: 3, deferred: 0 },
      changed: 3,
    });
  });

  it("a call not verified at the time stays refused, though its amount now falls in another band", () => {
    const report = compareWithDraft(CALLS, DRAFT);
    expect(report.changed.calls.find((c) => c.toolCallId === "call7")).toBeUndefined();
  });

  it("a tool taken off the allowlist turns its calls into refusals", () => {
    const report = compareWithDraft(CALLS, { ...V1, allowedTools: V1.allowedTools.filter((t) => t !== "lookup_order") });
    expect(report.changed.calls.map((c) => [c.toolCallId, c.now.outcome])).toEqual([["call9", "refused"]]);
  });

  it("judges the totals the call was judged on, not its amount alone", () => {
    // $50 now on an order already refunded $40: under a $80 limit the total ($90) needs a person.
    const split = call("refund_order", refund(5000, { orderDoneCents: 4000 }), "allow", [r("refund_policy", "allow")]);
    const report = compareWithDraft([split], DRAFT);
    expect(report.changed.calls.map((c) => c.now)).toEqual([{ outcome: "approval", approvers: 1 }]);
    // The customer's automatic refunds within the window count too.
    const customer = call("refund_order", refund(5000, { customerAutoCents: 12000 }), "allow", [r("refund_policy", "allow")]);
    expect(compareWithDraft([customer], { ...V1, refund: { ...V1.refund, autoPerCustomerMaxCents: 15000 } }).changed.total).toBe(1);
  });

  it("leaves out money calls recorded without the totals the rules now judge", () => {
    const { totals: _none, ...old } = refund(5000);
    const report = compareWithDraft([call("refund_order", old, "allow", [r("refund_policy", "allow")]), ...CALLS], DRAFT);
    expect(report).toMatchObject({ total: 11, skipped: 1 });
    expect(report.changed.total).toBe(6);
  });

  it("pages the changed calls", () => {
    const p2 = compareWithDraft(CALLS, DRAFT, { page: 2, pageSize: 4 });
    expect(p2.changed).toMatchObject({ total: 6, page: 2, pages: 2, pageSize: 4 });
    expect(p2.changed.calls.map((c) => c.toolCallId)).toEqual(["call10", "call11"]);
    expect(compareWithDraft(CALLS, DRAFT, { page: 99, pageSize: 4 }).changed.page).toBe(2);
  });

  // Its speed on a big shop (20,000 recorded calls read and judged again) is printed by `npm run bench:metrics`.
  it("replays a few thousand calls, each judged on its own, the tallies adding up", () => {
    const many = Array.from({ length: 5000 }, (_, i) => CALLS[i % CALLS.length]!);
    const report = compareWithDraft(many, DRAFT);
    const alone = many.map((c) => compareWithDraft([c], DRAFT));
    expect(report.total).toBe(5000);
    expect(report.changed.total).toBe(alone.reduce((n, r) => n + r.changed.total, 0));
    for (const outcome of ["automatic", "approval", "refused", "deferred"] as const) {
      expect(report.after[outcome].count).toBe(alone.reduce((n, r) => n + r.after[outcome].count, 0));
      expect(report.after[outcome].amountCents).toBe(alone.reduce((n, r) => n + r.after[outcome].amountCents, 0));
    }
    expect(report.changed).toMatchObject({ pages: Math.ceil(report.changed.total / WHAT_IF_PAGE_SIZE), page: 1 });
    expect(report.changed.calls).toHaveLength(WHAT_IF_PAGE_SIZE);
  });
});

describe("what-if over the calls a real runtime recorded", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
    // Under v1: $42.50 runs automatically, $250 waits for one approver, a cancellation waits for confirmation.
    await h.say("Hi, I'm dana@example.com. My order A-1001 arrived damaged, please refund it.");
    await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
    await h.say("Hi, I'm sam@example.com. Please cancel my order A-2001, I ordered the wrong size.");
  });
  afterAll(async () => {
    await h?.close();
  });
  const admin = () => ({ tenantId: h.acme.id, staffId: h.staff.ada.id });

  it("reads the shop's gated calls with their recorded decisions and replays them", async () => {
    const calls = await recordedCalls(h.db, h.acme.id, new Date(Date.now() - 86_400_000));
    const gated = calls.filter((c) => ["refund_order", "cancel_order"].includes(c.toolName));
    expect(gated.map((c) => [c.toolName, c.facts.amountCents, c.decision, c.requiredApprovals]).sort()).toEqual(
      [
        ["cancel_order", 12900, "ask", 1],
        ["refund_order", 25000, "ask", 1],
        ["refund_order", 4250, "allow", null],
      ].sort(),
    );

    const report = await whatIf(h.db, admin(), {
      rules: { ...V1, refund: { ...V1.refund, autoMaxCents: 4000 }, cancellation: { requiresApproval: false } },
    });
    expect(report.days).toBe(28);
    const moves = report.transitions.map((t) => [t.from.outcome, t.to.outcome, t.count, t.amountCents]);
    expect(moves).toEqual(
      expect.arrayContaining([
        ["automatic", "approval", 1, 4250],
        ["approval", "automatic", 1, 12900],
      ]),
    );
    expect(report.changed.total).toBe(2);
    const runIds = report.changed.calls.map((c) => c.runId);
    expect(await h.db.run.count({ where: { id: { in: runIds }, tenantId: h.acme.id } })).toBe(2);
  });

  it("looks back only as far as asked, and only at the caller's shop", async () => {
    const future = new Date(Date.now() + 2 * 86_400_000);
    expect((await whatIf(h.db, admin(), { rules: V1, days: 1, now: future })).total).toBe(0);
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    expect(await recordedCalls(h.db, globex.id, new Date(0))).toEqual([]);
  });

  it("refuses reviewers and supervisors, a window over 90 days, and an invalid draft", async () => {
    for (const who of [h.staff.raj, h.staff.sol]) {
      const err = await whatIf(h.db, { tenantId: who.tenantId, staffId: who.id }, { rules: V1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe("FORBIDDEN");
    }
    await expect(whatIf(h.db, admin(), { rules: V1, days: 91 })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    const bad = await whatIf(h.db, admin(), { rules: { ...V1, refund: { ...V1.refund, autoMaxCents: 60000 } } }).catch((e: AppError) => e);
    expect(bad).toMatchObject({ code: "INVALID_INPUT" });
    expect((bad as AppError).details?.fields).toMatchObject({
      "refund.twoApproversFromCents": expect.stringMatching(/at least the automatic limit/),
    });
  });
});

describe("what-if of a draft with another per-customer window", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it("counts the customer's automatic total again over a draft's other window, as the gates would", async () => {
    // Dana's automatic $42.50 refund, 10 days ago.
    const first = await h.say("Hi, I'm dana@example.com. My order A-1001 arrived damaged, please refund it.");
    expect((await h.effects()).map((e) => e.toolName)).toEqual(["refund_order"]);
    await h.db.toolCall.updateMany({
      where: { runId: first.runId!, name: "refund_order" },
      data: { createdAt: new Date(Date.now() - 10 * 86_400_000) },
    });
    const bands = (r: PolicyRulesInput, windowDays: number): PolicyRulesInput => ({
      ...r,
      refund: {
        ...r.refund,
        autoMaxCents: 25000,
        twoApproversFromCents: 40000,
        approvalMaxCents: 50000,
        autoPerCustomerMaxCents: 28000,
        autoPerCustomerWindowDays: windowDays,
      },
    });
    await h.publish((r) => bands(r, 30));
    // $250 on A-1002: within the automatic limit, but with the $42.50 of the last 30 days over her $280 total.
    const parked = await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
    expect(parked.phase).toBe("WAITING_FOR_APPROVAL");
    const parkedCall = await h.db.toolCall.findFirstOrThrow({ where: { runId: parked.runId!, name: "refund_order" } });

    // The admin previews a 7-day window (the $42.50 of 10 days ago no longer counts).
    const current = await h.db.policyVersion.findFirstOrThrow({
      where: { tenantId: h.acme.id },
      orderBy: { createdAt: "desc" },
    });
    const draft = bands(current.rules as unknown as PolicyRulesInput, 7);
    const report = await whatIf(h.db, { staffId: h.staff.ada.id, tenantId: h.acme.id }, { rules: draft, days: 28 });

    // What the gates really do under that draft: the same request runs automatically.
    await h.decide(parked.handoffs[0]!.id, "raj@acme.test", "deny", { reason: "asked again below" });
    await h.publish((r) => bands(r, 7));
    const again = await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
    expect(again.handoffs).toHaveLength(0);
    expect((await h.effects()).map((e) => e.toolName)).toEqual(["refund_order", "refund_order"]);

    // The what-if should have said so for the parked call.
    const moved = report.changed.calls.find((c) => c.toolCallId === parkedCall.id);
    expect(moved?.now.outcome).toBe("automatic");
  });
});
