import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import type { Viewer } from "./access";
import { resolvePeriod, shopMetrics } from "./metrics";
import { runFilterSchema, searchRuns } from "./runs";

// The metrics queries on runs built by hand with known answers: every figure, the runs list behind each figure
// (same count), an empty period, and the shop boundary (another shop's runs never count).

let tdb: TestDatabase;
let acme: Viewer;
let globex: Viewer;
let staff: Record<"rita" | "raj" | "sol" | "gus", string>;

// The period: 1–7 Nov 2026 in Tokyo (31 Oct 15:00 UTC – 7 Nov 15:00 UTC).
const PERIOD = { from: "2026-11-01", to: "2026-11-07", tz: "Asia/Tokyo" };
const IN = new Date("2026-11-03T02:00:00Z");
const sec = (at: Date, s: number) => new Date(at.getTime() + s * 1000);

let n = 0;
const payload = (trigger: string) => ({
  customer: null,
  asked: "help",
  tried: [],
  rootCause: "",
  amountCents: null,
  recommendedAction: "",
  reason: trigger,
  trigger,
  orderNumber: null,
});

interface Spec {
  tenant?: "acme" | "globex";
  startedAt?: Date;
  phase?: "COMPLETED" | "DEAD_LETTER" | "WAITING_FOR_APPROVAL" | "RUNNING";
  outcome?: string;
  cost?: number[];
  approval?: { status: "APPROVED" | "EDITED" | "DENIED" | "EXPIRED" | "PENDING"; by?: "rita" | "raj" | "sol" | "gus"; after?: number };
  escalation?: string;
  escalateCall?: boolean;
  refund?: { status: "SUCCEEDED" | "DENIED" | "EXPIRED"; cents: number; edited?: number; by?: "rita" | "raj" | "sol" };
}

async function makeRun(s: Spec): Promise<string> {
  const db = tdb.prisma;
  const i = ++n;
  const tenantId = s.tenant === "globex" ? globex.tenantId : acme.tenantId;
  const startedAt = s.startedAt ?? sec(IN, i * 60);
  const conv = await db.conversation.create({ data: { tenantId, tokenHash: `metrics-test-${i}` } });
  const run = await db.run.create({
    data: {
      id: `mrun${String(i).padStart(3, "0")}`,
      tenantId,
      conversationId: conv.id,
      phase: s.phase ?? "COMPLETED",
      outcome: s.outcome ?? (s.phase === "DEAD_LETTER" ? "no_progress: model down" : "end_turn"),
      maxTurns: 12,
      tokenBudget: 80000,
      policyVersion: 1,
      promptVersion: "p",
      toolsVersion: "t",
      model: "m",
      startedAt,
      costMicros: (s.cost ?? []).reduce((a, b) => a + b, 0),
    },
  });
  for (const [k, cost] of (s.cost ?? []).entries())
    await db.modelCall.create({
      data: {
        tenantId,
        runId: run.id,
        turn: k + 1,
        model: "m",
        costMicros: cost,
        maxTokens: 1024,
        latencyMs: 1,
        throughSeq: 1,
        createdAt: startedAt,
      },
    });
  let callId: string | null = null;
  if (s.refund) {
    const by = s.refund.by ? staff[s.refund.by] : null;
    const input = { order_number: "A-1", amount_cents: s.refund.cents, reason: "x" };
    const call = await db.toolCall.create({
      data: {
        tenantId,
        runId: run.id,
        toolUseId: `tu${i}`,
        name: "refund_order",
        input,
        effectiveInput: s.refund.edited ? { ...input, amount_cents: s.refund.edited } : input,
        status: s.refund.status,
        gateDecision: by ? "ask" : "allow",
        gateReason: "r",
        decidedById: by,
        position: 0,
        messageSeq: 2,
      },
    });
    callId = call.id;
  }
  if (s.escalateCall)
    await db.toolCall.create({
      data: {
        tenantId,
        runId: run.id,
        toolUseId: `te${i}`,
        name: "escalate_to_human",
        input: {},
        status: "SUCCEEDED",
        gateDecision: "allow",
        gateReason: "r",
        position: 0,
        messageSeq: 2,
      },
    });
  if (s.approval) {
    const createdAt = sec(startedAt, 10);
    await db.handoff.create({
      data: {
        tenantId,
        conversationId: conv.id,
        runId: run.id,
        toolCallId: callId,
        kind: "APPROVAL",
        status: s.approval.status,
        payload: payload("approval_required"),
        decidedById: s.approval.by ? staff[s.approval.by] : null,
        decidedAt: s.approval.status === "PENDING" ? null : sec(createdAt, s.approval.after ?? 86_400),
        createdAt,
      },
    });
  }
  if (s.escalation)
    await db.handoff.create({
      data: { tenantId, conversationId: conv.id, runId: run.id, kind: "ESCALATION", status: "RESOLVED", payload: payload(s.escalation) },
    });
  return run.id;
}

beforeAll(async () => {
  tdb = await createTestDatabase();
  const db = tdb.prisma;
  const [a, g] = await Promise.all([
    db.tenant.findUniqueOrThrow({ where: { slug: "acme" } }),
    db.tenant.findUniqueOrThrow({ where: { slug: "globex" } }),
  ]);
  acme = { tenantId: a.id, role: "supervisor" };
  globex = { tenantId: g.id, role: "admin" };
  const by = async (email: string) => (await db.staffUser.findUniqueOrThrow({ where: { email } })).id;
  staff = {
    rita: await by("rita@acme.test"),
    raj: await by("raj@acme.test"),
    sol: await by("sol@acme.test"),
    gus: await by("gus@globex.test"),
  };

  await makeRun({ cost: [1000, 500] }); // resolved by the agent
  await makeRun({ cost: [700], refund: { status: "SUCCEEDED", cents: 4500 } }); // an automatic refund, resolved alone
  await makeRun({ approval: { status: "APPROVED", by: "raj", after: 60 }, refund: { status: "SUCCEEDED", cents: 20000, by: "raj" } });
  await makeRun({
    approval: { status: "EDITED", by: "raj", after: 120 },
    refund: { status: "SUCCEEDED", cents: 8000, edited: 5000, by: "raj" },
  });
  await makeRun({ approval: { status: "DENIED", by: "rita", after: 300 }, refund: { status: "DENIED", cents: 30000, by: "rita" } });
  await makeRun({ approval: { status: "EXPIRED" }, refund: { status: "EXPIRED", cents: 15000 } });
  await makeRun({ escalation: "customer_request", escalateCall: true, cost: [300] });
  await makeRun({ phase: "DEAD_LETTER", escalation: "no_progress" });
  await makeRun({ phase: "WAITING_FOR_APPROVAL", approval: { status: "PENDING" }, refund: { status: "EXPIRED", cents: 1 } });
  // Outside the period: 31 Oct 14:59 UTC is still 31 Oct in Tokyo.
  await makeRun({ startedAt: new Date("2026-10-31T14:59:00Z"), cost: [9999] });
  // Inside it at its very start, in Tokyo (1 Nov 00:00 JST), and at its very end (7 Nov 23:59 JST).
  await makeRun({ startedAt: new Date("2026-10-31T15:00:00Z") });
  await makeRun({ startedAt: new Date("2026-11-07T14:59:59Z"), escalation: "policy_gap" });
  // Another shop, same period: never in acme's figures.
  await makeRun({ tenant: "globex", cost: [5000], escalation: "customer_request", approval: { status: "DENIED", by: "gus", after: 5 } });
});
afterAll(async () => {
  await tdb?.drop();
});

describe("metrics over a period", () => {
  it("counts every figure with known answers, in the viewer's time zone", async () => {
    const period = resolvePeriod(PERIOD);
    expect(period).toMatchObject({ from: "2026-11-01", to: "2026-11-07", days: 7, preset: null });
    expect(period.start).toEqual(new Date("2026-10-31T15:00:00Z"));
    expect(period.end).toEqual(new Date("2026-11-07T15:00:00Z"));
    const m = await shopMetrics(tdb.prisma, acme, period);

    expect(m.runs.runs).toBe(11);
    expect(Object.fromEntries(m.outcomes.map((o) => [o.outcome, o.runs]))).toEqual({
      running: 0,
      waiting: 1,
      dead_letter: 1,
      escalated: 2,
      expired: 1,
      denied: 1,
      approved: 2,
      resolved_by_agent: 3,
    });
    expect(m.resolvedByAgent).toMatchObject({ runs: 3, finished: 10 });
    // Conversations none of whose runs involved a person: the three resolved alone.
    expect(m.conversations).toEqual({ all: 11, resolvedWithoutPerson: 3 });
    expect(m.escalations.map((e) => [e.reason, e.runs])).toEqual([
      ["customer_request", 1],
      ["no_progress", 1],
      ["policy_gap", 1],
    ]);
    // 60 s, 120 s, 300 s: median 120 s, p90 (interpolated) 264 s.
    expect(m.decisionTime).toMatchObject({ decisions: 3, runs: 3, medianSeconds: 120, p90Seconds: 264 });
    expect(m.reviewers.map((r) => [r.name, r.approved.runs, r.edited.runs, r.denied.runs])).toEqual([
      ["Raj", 1, 1, 0],
      ["Rita", 0, 0, 1],
    ]);
    expect(m.expiries.runs).toBe(1);
    expect(m.deadLetters.runs).toBe(1);
    expect(m.refunds.auto).toMatchObject({ cents: 4500, runs: 1 });
    expect(m.refunds.approved).toMatchObject({ cents: 25000, runs: 2 }); // the edit counts what ran: $50, not $80
    expect(m.refunds.denied).toMatchObject({ cents: 30000, runs: 1 });
    expect(m.spend).toMatchObject({ micros: 2500, modelCalls: 4 });
    expect(m.daily).toHaveLength(7);
    expect(m.daily[0]).toMatchObject({ day: "2026-11-01", resolved_by_agent: 1 });
    expect(m.daily[2]).toMatchObject({ day: "2026-11-03", spendUsd: 0.0025, modelCalls: 4 });
    expect(m.daily[6]).toMatchObject({ day: "2026-11-07", escalated: 1 });
  });

  it("each figure's link opens exactly the runs behind it (same count)", async () => {
    const period = resolvePeriod(PERIOD);
    const m = await shopMetrics(tdb.prisma, acme, period);
    const figures: Array<{ runs: number; href: string }> = [
      m.runs,
      ...m.outcomes,
      ...m.escalations,
      m.decisionTime,
      m.expiries,
      m.deadLetters,
      m.refunds.auto,
      m.refunds.approved,
      m.refunds.denied,
      ...m.reviewers.flatMap((r) => [r.approved, r.edited, r.denied]),
    ];
    for (const f of figures) {
      const url = new URL(f.href, "http://x");
      expect(url.pathname).toBe("/console/runs");
      const filter = runFilterSchema.parse(Object.fromEntries(url.searchParams));
      const page = await searchRuns(tdb.prisma, acme, filter, { count: true, limit: 500 });
      expect({ href: f.href, runs: page.total }).toEqual({ href: f.href, runs: f.runs });
      expect(page.runs).toHaveLength(f.runs);
    }
  });

  it("an empty period has zeros and no medians, one row per day", async () => {
    const m = await shopMetrics(tdb.prisma, acme, resolvePeriod({ from: "2020-01-01", to: "2020-01-03" }));
    expect(m.runs.runs).toBe(0);
    expect(m.outcomes.every((o) => o.runs === 0)).toBe(true);
    expect(m.escalations).toEqual([]);
    expect(m.decisionTime).toMatchObject({ decisions: 0, medianSeconds: null, p90Seconds: null });
    expect(m.reviewers).toEqual([]);
    expect(m.refunds.auto).toMatchObject({ cents: 0, runs: 0 });
    expect(m.spend.micros).toBe(0);
    expect(m.daily.map((d) => d.day)).toEqual(["2020-01-01", "2020-01-02", "2020-01-03"]);
  });

  it("another shop's runs never count, and each shop sees its own", async () => {
    const m = await shopMetrics(tdb.prisma, globex, resolvePeriod(PERIOD));
    expect(m.runs.runs).toBe(1);
    expect(m.spend.micros).toBe(5000);
    expect(m.escalations.map((e) => [e.reason, e.runs])).toEqual([["customer_request", 1]]);
    expect(m.reviewers.map((r) => [r.name, r.denied.runs])).toEqual([["Gus", 1]]);
    // acme's figures above already exclude globex's run (11 runs, Rita and Raj only, no $50 of spend).
  });

  it("refuses reviewers, and says plainly what is wrong with a period", async () => {
    await expect(shopMetrics(tdb.prisma, { ...acme, role: "reviewer" }, resolvePeriod(PERIOD))).rejects.toMatchObject({
      code: "FORBIDDEN",
    });
    expect(() => resolvePeriod({ from: "2026-11-07", to: "2026-11-01" })).toThrow("The start date is after the end date.");
    expect(() => resolvePeriod({ from: "2026-11-01" })).toThrow("needs both");
    expect(() => resolvePeriod({ from: "2024-01-01", to: "2026-01-01" })).toThrow("at most 366 days");
    expect(() => resolvePeriod({ from: "2026-02-30", to: "2026-03-01" })).toThrow("From: use a date like 2026-12-01");
    expect(() => resolvePeriod({ tz: "Mars/Olympus" })).toThrow("Time zone");
    expect(() => resolvePeriod({ days: "12" })).toThrow();
  });

  it("a preset ends today in the viewer's zone", () => {
    // 1 Dec 2026 20:00 UTC is already 2 Dec in Tokyo.
    const now = new Date("2026-12-01T20:00:00Z");
    expect(resolvePeriod({ days: "7", tz: "Asia/Tokyo" }, now)).toMatchObject({ preset: 7, from: "2026-11-26", to: "2026-12-02", days: 7 });
    expect(resolvePeriod({}, now)).toMatchObject({ preset: 30, from: "2026-11-02", to: "2026-12-01", tz: "UTC" });
  });
});
