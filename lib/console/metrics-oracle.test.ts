import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import type { Viewer } from "./access";
import { dayIn } from "./dates";
import { periodDayStarts, resolvePeriod, shopMetrics } from "./metrics";
import { RUN_OUTCOMES, type RunOutcome, runOutcome } from "./run-outcome";
import { runFilterSchema, searchRuns } from "./runs";

// The metrics queries against an oracle: ~200 generated runs of two shops (every phase, handoffs of both kinds in
// every state, escalate_to_human and refund calls in every state, edited refunds, suppressed replies, conversations
// with several runs, model calls), started around two daylight-saving changes and on the exact instants days begin.
// Every figure is recomputed here from the rows themselves — the run's outcome with run-outcome.ts, its day with
// dayIn — for periods in zones with and without DST and with a 45-minute offset, and must match; every figure's
// link must open as many runs. The other shop's rows are built the same way and must never count.

let tdb: TestDatabase;
let acme: Viewer;
let globex: Viewer;
const staffNames = new Map<string, string>();

type Phase = "RUNNING" | "WAITING_FOR_APPROVAL" | "WAITING_FOR_RETRY" | "COMPLETED" | "ESCALATED" | "DEAD_LETTER";
type HandoffStatus = "PENDING" | "APPROVED" | "DENIED" | "EDITED" | "EXPIRED" | "RESOLVED" | "CANCELLED";
type CallStatus = "SUCCEEDED" | "DENIED" | "EXPIRED" | "PARKED" | "FAILED";

interface GenRun {
  id: string;
  tenantId: string;
  conversationId: string;
  phase: Phase;
  outcome: string | null;
  startedAt: Date;
  handoffs: Array<{
    kind: "APPROVAL" | "ESCALATION";
    status: HandoffStatus;
    trigger: string;
    decidedById: string | null;
    createdAt: Date;
    decidedAt: Date | null;
  }>;
  calls: Array<{
    name: "refund_order" | "escalate_to_human" | "lookup_order";
    status: CallStatus;
    decidedById: string | null;
    input: { order_number?: string; amount_cents?: number | string };
    effectiveInput: { order_number?: string; amount_cents?: number | string } | null;
  }>;
  costs: number[];
}

/** A small deterministic generator (mulberry32). */
function rng(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
    chance: (p: number) => next() < p,
  };
}

// Runs from 21 Oct to 6 Nov 2026: Berlin leaves summer time on 25 Oct, New York on 1 Nov.
const WINDOW_START = Date.parse("2026-10-21T00:00:00Z");
const WINDOW_MS = 16 * 86_400_000;
const PERIODS = [
  { from: "2026-10-29", to: "2026-11-04", tz: "America/New_York" },
  { from: "2026-10-23", to: "2026-10-27", tz: "Europe/Berlin" },
  { from: "2026-10-30", to: "2026-11-02", tz: "Asia/Kathmandu" },
  { from: "2026-10-21", to: "2026-11-06", tz: "UTC" },
];

const runs: GenRun[] = [];
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

function generate(tenantId: string, staff: string[], count: number, seed: number, prefix: string) {
  const r = rng(seed);
  // Every instant a period's day starts, and the millisecond before it, gets a run of its own.
  const edges = PERIODS.flatMap((p) => periodDayStarts(p).flatMap((d) => [d.getTime(), d.getTime() - 1]));
  const conversations: string[] = [];
  const pendingEscalation = new Set<string>(); // at most one per conversation (a unique index)
  for (let i = 0; i < count + edges.length; i++) {
    const startedAt = new Date(i < edges.length ? edges[i]! : WINDOW_START + r.int(WINDOW_MS));
    const shared = conversations.length > 0 && r.chance(0.25);
    const conversationId = shared ? r.pick(conversations) : `${prefix}c${i}`;
    if (!shared) conversations.push(conversationId);
    const phase = r.pick<Phase>([
      "COMPLETED",
      "COMPLETED",
      "COMPLETED",
      "ESCALATED",
      "DEAD_LETTER",
      "RUNNING",
      "WAITING_FOR_APPROVAL",
      "WAITING_FOR_RETRY",
    ]);
    const outcome =
      phase === "COMPLETED"
        ? r.pick(["end_turn", "end_turn", "end_turn (suppressed: a person owns the conversation)", "nothing to answer"])
        : phase === "ESCALATED" || phase === "DEAD_LETTER"
          ? r.pick(["no_progress: the model could not be reached", "policy_ceiling: above $500"])
          : null;
    const run: GenRun = {
      id: `${prefix}r${String(i).padStart(3, "0")}`,
      tenantId,
      conversationId,
      phase,
      outcome,
      startedAt,
      handoffs: [],
      calls: [],
      costs: [],
    };
    for (let k = r.int(3); k > 0; k--) {
      const kind = r.pick(["APPROVAL", "ESCALATION"] as const);
      let status =
        kind === "APPROVAL"
          ? r.pick<HandoffStatus>(["PENDING", "APPROVED", "EDITED", "DENIED", "EXPIRED", "CANCELLED"])
          : r.pick<HandoffStatus>(["PENDING", "RESOLVED", "CANCELLED"]);
      if (kind === "ESCALATION" && status === "PENDING" && pendingEscalation.has(conversationId)) status = "RESOLVED";
      if (kind === "ESCALATION" && status === "PENDING") pendingEscalation.add(conversationId);
      const createdAt = new Date(startedAt.getTime() + 1000 * (1 + r.int(600)));
      const decided = status !== "PENDING" && r.chance(0.9);
      run.handoffs.push({
        kind,
        status,
        trigger: kind === "APPROVAL" ? "approval_required" : r.pick(["customer_request", "policy_gap", "no_progress", "policy_ceiling"]),
        decidedById: decided && status !== "EXPIRED" && r.chance(0.9) ? r.pick(staff) : null,
        createdAt,
        decidedAt: decided ? new Date(createdAt.getTime() + 1000 * (1 + r.int(86_400))) : null,
      });
    }
    for (let k = r.int(3); k > 0; k--) {
      const name = r.pick(["refund_order", "refund_order", "escalate_to_human", "lookup_order"] as const);
      const amount = 100 + r.int(50_000);
      // The model may give the amount as a string of digits: the figure reads it all the same.
      const input = name === "refund_order" ? { order_number: "A-1", amount_cents: r.chance(0.1) ? String(amount) : amount } : {};
      const edited = name === "refund_order" && r.chance(0.3);
      run.calls.push({
        name,
        status: r.pick<CallStatus>(["SUCCEEDED", "SUCCEEDED", "DENIED", "EXPIRED", "PARKED", "FAILED"]),
        decidedById: r.chance(0.5) ? r.pick(staff) : null,
        input,
        effectiveInput: edited ? { ...input, amount_cents: 50 + r.int(1000) } : name === "refund_order" && r.chance(0.5) ? input : null,
      });
    }
    for (let k = r.int(4); k > 0; k--) run.costs.push(1 + r.int(20_000));
    runs.push(run);
  }
}

beforeAll(async () => {
  tdb = await createTestDatabase();
  const db = tdb.prisma;
  const [a, g] = await Promise.all([
    db.tenant.findUniqueOrThrow({ where: { slug: "acme" } }),
    db.tenant.findUniqueOrThrow({ where: { slug: "globex" } }),
  ]);
  acme = { tenantId: a.id, role: "supervisor" };
  globex = { tenantId: g.id, role: "supervisor" };
  const staff = await db.staffUser.findMany({ select: { id: true, tenantId: true, name: true } });
  for (const s of staff) staffNames.set(s.id, s.name);
  const of = (t: string) => staff.filter((s) => s.tenantId === t).map((s) => s.id);
  generate(acme.tenantId, of(acme.tenantId), 160, 7, "a");
  generate(globex.tenantId, of(globex.tenantId), 40, 11, "g");

  await db.conversation.createMany({
    data: [...new Map(runs.map((r) => [r.conversationId, r])).values()].map((r) => ({
      id: r.conversationId,
      tenantId: r.tenantId,
      tokenHash: `oracle-${r.conversationId}`,
    })),
  });
  await db.run.createMany({
    data: runs.map((r) => ({
      id: r.id,
      tenantId: r.tenantId,
      conversationId: r.conversationId,
      phase: r.phase,
      outcome: r.outcome,
      maxTurns: 12,
      tokenBudget: 80000,
      policyVersion: 1,
      promptVersion: "p",
      toolsVersion: "t",
      model: "m",
      startedAt: r.startedAt,
      costMicros: r.costs.reduce((x, y) => x + y, 0),
    })),
  });
  await db.toolCall.createMany({
    data: runs.flatMap((r) =>
      r.calls.map((c, k) => ({
        tenantId: r.tenantId,
        runId: r.id,
        toolUseId: `tu_${r.id}_${k}`,
        name: c.name,
        input: c.input,
        ...(c.effectiveInput ? { effectiveInput: c.effectiveInput } : {}),
        status: c.status,
        gateDecision: c.decidedById ? ("ask" as const) : ("allow" as const),
        gateReason: "r",
        decidedById: c.decidedById,
        position: k,
        messageSeq: 2,
      })),
    ),
  });
  await db.handoff.createMany({
    data: runs.flatMap((r) =>
      r.handoffs.map((h) => ({
        tenantId: r.tenantId,
        conversationId: r.conversationId,
        runId: r.id,
        kind: h.kind,
        status: h.status,
        payload: payload(h.trigger),
        decidedById: h.decidedById,
        decidedAt: h.decidedAt,
        createdAt: h.createdAt,
      })),
    ),
  });
  await db.modelCall.createMany({
    data: runs.flatMap((r) =>
      r.costs.map((cost, k) => ({
        tenantId: r.tenantId,
        runId: r.id,
        turn: k + 1,
        model: "m",
        costMicros: cost,
        maxTokens: 1024,
        latencyMs: 1,
        throughSeq: 1,
        createdAt: r.startedAt,
      })),
    ),
  });
});
afterAll(async () => {
  await tdb?.drop();
});

/** percentile_cont: linear interpolation between the closest ranks. */
function percentile(xs: number[], q: number): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const at = q * (s.length - 1);
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return s[lo]! + (s[hi]! - s[lo]!) * (at - lo);
}

/** Every figure of the page, computed from the generated rows. */
function expected(viewer: Viewer, p: ReturnType<typeof resolvePeriod>) {
  const inPeriod = runs.filter((r) => r.tenantId === viewer.tenantId && r.startedAt >= p.start && r.startedAt < p.end);
  const outcomeOf = (r: GenRun): RunOutcome =>
    runOutcome({
      phase: r.phase,
      outcome: r.outcome,
      handoffs: r.handoffs,
      toolCalls: r.calls.map((c) => ({ name: c.name, status: c.status })),
    });
  const days = new Map<string, Record<string, number>>();
  const day = (r: GenRun): Record<string, number> => {
    const d = dayIn(r.startedAt, p.tz);
    const row = days.get(d) ?? Object.fromEntries([...RUN_OUTCOMES.map((o) => [o, 0]), ["micros", 0], ["calls", 0]]);
    days.set(d, row);
    return row;
  };
  const outcomes = Object.fromEntries(RUN_OUTCOMES.map((o) => [o, 0])) as Record<RunOutcome, number>;
  for (const r of inPeriod) {
    const o = outcomeOf(r);
    outcomes[o]++;
    const row = day(r);
    row[o]!++;
    row.micros! += r.costs.reduce((x, y) => x + y, 0);
    row.calls! += r.costs.length;
  }
  const needsPerson = (r: GenRun) =>
    r.phase === "ESCALATED" ||
    r.phase === "DEAD_LETTER" ||
    (r.outcome ?? "").startsWith("end_turn (suppressed") ||
    r.handoffs.length > 0 ||
    r.calls.some((c) => c.name === "escalate_to_human" && c.status === "SUCCEEDED");
  const conversations = new Map<string, GenRun[]>();
  for (const r of inPeriod) conversations.set(r.conversationId, [...(conversations.get(r.conversationId) ?? []), r]);
  const alone = [...conversations.values()].filter((rs) => rs.some((r) => r.phase === "COMPLETED") && !rs.some(needsPerson)).length;

  const reasons = new Map<string, Set<string>>();
  const decidedSeconds: number[] = [];
  const decidedRuns = new Set<string>();
  const expiredRuns = new Set<string>();
  const reviewers = new Map<string, Record<"APPROVED" | "EDITED" | "DENIED", Set<string>>>();
  const refunds = {
    auto: { runs: new Set<string>(), calls: 0, cents: 0 },
    approved: { runs: new Set<string>(), calls: 0, cents: 0 },
    denied: { runs: new Set<string>(), calls: 0, cents: 0 },
  };
  for (const r of inPeriod) {
    for (const h of r.handoffs) {
      if (h.kind === "ESCALATION") reasons.set(h.trigger, (reasons.get(h.trigger) ?? new Set()).add(r.id));
      if (h.kind !== "APPROVAL") continue;
      if (h.status === "EXPIRED") expiredRuns.add(r.id);
      if ((h.status === "APPROVED" || h.status === "EDITED" || h.status === "DENIED") && h.decidedById) {
        if (h.decidedAt) {
          decidedSeconds.push((h.decidedAt.getTime() - h.createdAt.getTime()) / 1000);
          decidedRuns.add(r.id);
        }
        let person = reviewers.get(h.decidedById);
        if (!person) reviewers.set(h.decidedById, (person = { APPROVED: new Set(), EDITED: new Set(), DENIED: new Set() }));
        person[h.status].add(r.id);
      }
    }
    for (const c of r.calls) {
      if (c.name !== "refund_order") continue;
      const kind =
        c.status === "SUCCEEDED" ? (c.decidedById ? "approved" : "auto") : c.status === "DENIED" && c.decidedById ? "denied" : null;
      if (!kind) continue;
      refunds[kind].runs.add(r.id);
      refunds[kind].calls++;
      refunds[kind].cents += Number((c.effectiveInput ?? c.input).amount_cents ?? 0);
    }
  }
  const finished = inPeriod.length - outcomes.running - outcomes.waiting;
  return {
    runs: inPeriod.length,
    finished,
    outcomes,
    conversations: { all: conversations.size, resolvedWithoutPerson: alone },
    escalations: [...reasons.entries()]
      .map(([reason, rs]) => [reason, rs.size] as const)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)),
    decisionTime: {
      decisions: decidedSeconds.length,
      runs: decidedRuns.size,
      medianSeconds: percentile(decidedSeconds, 0.5),
      p90Seconds: percentile(decidedSeconds, 0.9),
    },
    reviewers: [...reviewers.entries()]
      .map(([id, s]) => [staffNames.get(id)!, s.APPROVED.size, s.EDITED.size, s.DENIED.size] as const)
      .sort((a, b) => a[0].localeCompare(b[0])),
    expiries: expiredRuns.size,
    refunds: Object.fromEntries(Object.entries(refunds).map(([k, v]) => [k, { runs: v.runs.size, calls: v.calls, cents: v.cents }])),
    spend: [...days.values()].reduce((s, d) => ({ micros: s.micros + d.micros!, modelCalls: s.modelCalls + d.calls! }), {
      micros: 0,
      modelCalls: 0,
    }),
    days,
  };
}

describe("metrics against an oracle", () => {
  it("the generated runs cover what the figures distinguish", () => {
    const acmeRuns = runs.filter((r) => r.tenantId === acme.tenantId);
    const seen = new Set(
      acmeRuns.map((r) =>
        runOutcome({
          phase: r.phase,
          outcome: r.outcome,
          handoffs: r.handoffs,
          toolCalls: r.calls.map((c) => ({ name: c.name, status: c.status })),
        }),
      ),
    );
    expect([...seen].sort()).toEqual([...RUN_OUTCOMES].sort());
    expect(acmeRuns.some((r) => (r.outcome ?? "").startsWith("end_turn (suppressed"))).toBe(true);
    expect(
      acmeRuns.some((r) =>
        r.calls.some((c) => c.name === "refund_order" && c.effectiveInput && c.effectiveInput.amount_cents !== c.input.amount_cents),
      ),
    ).toBe(true);
    expect(new Set(acmeRuns.map((r) => r.conversationId)).size).toBeLessThan(acmeRuns.length);
  });

  for (const spec of PERIODS)
    it(`every figure matches, ${spec.from} – ${spec.to} in ${spec.tz}`, async () => {
      for (const viewer of [acme, globex]) {
        const period = resolvePeriod(spec);
        const want = expected(viewer, period);
        const m = await shopMetrics(tdb.prisma, viewer, period);
        expect(want.runs).toBeGreaterThan(0);
        expect(m.runs).toMatchObject({ runs: want.runs, finished: want.finished });
        expect(Object.fromEntries(m.outcomes.map((o) => [o.outcome, o.runs]))).toEqual(want.outcomes);
        expect(m.conversations).toEqual(want.conversations);
        expect(m.escalations.map((e) => [e.reason, e.runs])).toEqual(want.escalations);
        expect(m.decisionTime.decisions).toBe(want.decisionTime.decisions);
        expect(m.decisionTime.runs).toBe(want.decisionTime.runs);
        if (want.decisionTime.medianSeconds === null) expect(m.decisionTime.medianSeconds).toBeNull();
        else {
          expect(m.decisionTime.medianSeconds).toBeCloseTo(want.decisionTime.medianSeconds, 6);
          expect(m.decisionTime.p90Seconds).toBeCloseTo(want.decisionTime.p90Seconds!, 6);
        }
        expect(m.reviewers.map((r) => [r.name, r.approved.runs, r.edited.runs, r.denied.runs])).toEqual(want.reviewers);
        expect(m.expiries.runs).toBe(want.expiries);
        expect(m.deadLetters.runs).toBe(want.outcomes.dead_letter);
        for (const kind of ["auto", "approved", "denied"] as const) expect(m.refunds[kind]).toMatchObject(want.refunds[kind]!);
        expect(m.spend).toMatchObject(want.spend);
        // Day by day, in the period's zone: each run on the day it started there.
        for (const d of m.daily) {
          const w = want.days.get(d.day as string);
          for (const o of RUN_OUTCOMES)
            expect({ day: d.day, outcome: o, runs: d[o] }).toEqual({ day: d.day, outcome: o, runs: w?.[o] ?? 0 });
          expect({ day: d.day, micros: Math.round((d.spendUsd as number) * 1_000_000), calls: d.modelCalls }).toEqual({
            day: d.day,
            micros: w?.micros ?? 0,
            calls: w?.calls ?? 0,
          });
        }
        expect([...want.days.keys()].every((d) => m.daily.some((row) => row.day === d))).toBe(true);
      }
    });

  it("each figure's link opens exactly the runs behind it (same count)", async () => {
    const period = resolvePeriod(PERIODS[0]!);
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
      const filter = runFilterSchema.parse(Object.fromEntries(url.searchParams));
      const page = await searchRuns(tdb.prisma, acme, filter, { count: true, limit: 1 });
      expect({ href: f.href, runs: page.total }).toEqual({ href: f.href, runs: f.runs });
    }
  });

  it("a refund's amount follows a reviewer's later edit (the generated column is rewritten with the row)", async () => {
    const period = resolvePeriod(PERIODS[3]!);
    const before = await shopMetrics(tdb.prisma, acme, period);
    const call = await tdb.prisma.toolCall.findFirstOrThrow({
      where: {
        tenantId: acme.tenantId,
        name: "refund_order",
        status: "SUCCEEDED",
        decidedById: null,
        run: { startedAt: { gte: period.start, lt: period.end } },
      },
      orderBy: { id: "asc" },
    });
    const input = call.input as { amount_cents: number | string };
    const ran = Number(((call.effectiveInput ?? call.input) as { amount_cents: number | string }).amount_cents);
    await tdb.prisma.toolCall.update({ where: { id: call.id }, data: { effectiveInput: { ...input, amount_cents: ran + 12_345 } } });
    const after = await shopMetrics(tdb.prisma, acme, period);
    expect(after.refunds.auto.cents - before.refunds.auto.cents).toBe(12_345);
    expect(after.refunds.auto.calls).toBe(before.refunds.auto.calls);
  });
});
