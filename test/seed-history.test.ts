import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countStatements } from "@/bench/peers/scenario";
import { resolvePeriod, shopMetrics } from "@/lib/console/metrics";
import { storeOf } from "@/lib/db/kysely";
import { DEMO_POLICY_RULES } from "@/lib/setup/seed";
import { HISTORY_DAYS, seedDemoHistory } from "@/lib/setup/seed-history";
import { whatIf } from "@/lib/settings/what-if";
import { buildModelMessages, loadTranscript, transcriptViolations } from "@/lib/store/transcript";
import { createTestDatabase, type TestDatabase } from "./db";

// The demo history (npm run db:seed / npm start): weeks of acme's past runs, written consistently into the real
// tables, deterministic, fast, and invisible to the open queue and to the demo customers the specs use.

const NOW = new Date("2026-12-01T15:00:00Z");
let a: TestDatabase;
let b: TestDatabase;
let seeded = { runs: 0, rows: 0, statements: 0 };

beforeAll(async () => {
  [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  // Rows in every table of the schema (the history writes a dozen of them).
  const rowsOf = async (db: TestDatabase) => {
    const tables = await db.prisma.$queryRawUnsafe<Array<{ name: string }>>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
    );
    const counts = await db.prisma.$queryRawUnsafe<Array<{ n: bigint }>>(
      `SELECT ${tables.map((t) => `(SELECT count(*) FROM "${t.name}")`).join(" + ")} AS n`,
    );
    return Number(counts[0]!.n);
  };
  const before = await rowsOf(a);
  const counter = countStatements(pg.Client); // every statement ends on pg's Client (Prisma's adapter, the SQL store)
  try {
    seeded.runs = (await seedDemoHistory(a.prisma, { now: NOW })).runs;
  } finally {
    counter.restore();
  }
  seeded = { ...seeded, statements: counter.count, rows: (await rowsOf(a)) - before };
  await seedDemoHistory(b.prisma, { now: NOW });
});
afterAll(async () => {
  await Promise.all([a?.drop(), b?.drop()]);
});

describe("demo history", () => {
  it("is written in bulk, deterministic and written once", async () => {
    // Bulk inserts (a statement per table and set of columns), not a statement per row: what keeps `npm start` quick.
    expect(seeded.runs).toBeGreaterThan(100);
    expect(seeded.rows).toBeGreaterThan(10 * seeded.runs);
    expect(seeded.statements).toBeLessThan(seeded.runs / 2);
    const fingerprint = async (db: TestDatabase) =>
      (await db.prisma.run.findMany({ orderBy: { id: "asc" }, select: { id: true, phase: true, costMicros: true, startedAt: true } })).map(
        (r) => `${r.id}|${r.phase}|${r.costMicros}|${r.startedAt.toISOString()}`,
      );
    expect(await fingerprint(a)).toEqual(await fingerprint(b));
    expect((await seedDemoHistory(a.prisma, { now: NOW })).runs).toBe(0);
  });

  it("has valid transcripts: every tool_use answered by its tool_result in the next user message", async () => {
    const conversations = await a.prisma.conversation.findMany({ where: { id: { startsWith: "hist_" } }, select: { id: true } });
    expect(conversations.length).toBeGreaterThan(100);
    for (const c of conversations) {
      const messages = buildModelMessages(await loadTranscript(storeOf(a.prisma), c.id));
      expect({ id: c.id, problems: transcriptViolations(messages) }).toEqual({ id: c.id, problems: [] });
    }
    // Each tool call has its gate decisions, and each model call its usage and cost.
    const orphanCalls = await a.prisma.toolCall.count({
      where: {
        runId: { startsWith: "hist_" },
        NOT: { id: { in: (await a.prisma.gateDecision.findMany({ select: { toolCallId: true } })).map((g) => g.toolCallId!) } },
      },
    });
    expect(orphanCalls).toBe(0);
    const runs = await a.prisma.run.findMany({ where: { id: { startsWith: "hist_" } }, include: { modelCalls: true } });
    for (const r of runs) expect(r.costMicros).toBe(r.modelCalls.reduce((s, m) => s + m.costMicros, 0));
  });

  it("records every refund as an effect with its ledger row, and orders add up", async () => {
    const effects = await a.prisma.effectLedger.findMany({ where: { runId: { startsWith: "hist_" } } });
    const refunds = await a.prisma.refund.findMany({ where: { id: { startsWith: "hist_" } } });
    expect(effects.length).toBeGreaterThan(10);
    expect(new Set(refunds.map((r) => r.idempotencyKey))).toEqual(new Set(effects.map((e) => e.idempotencyKey)));
    const succeeded = await a.prisma.toolCall.findMany({
      where: { runId: { startsWith: "hist_" }, name: "refund_order", status: "SUCCEEDED" },
    });
    expect(new Set(succeeded.map((c) => c.idempotencyKey))).toEqual(new Set(effects.map((e) => e.idempotencyKey)));
    const orders = await a.prisma.order.findMany({ where: { id: { startsWith: "hist_" } }, include: { refunds: true } });
    for (const o of orders) expect(o.refundedCents).toBe(o.refunds.reduce((s, r) => s + r.amountCents, 0));
  });

  it("leaves the open queue and the demo customers alone", async () => {
    expect(await a.prisma.handoff.count({ where: { id: { startsWith: "hist_" }, status: "PENDING" } })).toBe(0);
    expect(
      await a.prisma.run.count({
        where: { id: { startsWith: "hist_" }, phase: { in: ["RUNNING", "WAITING_FOR_APPROVAL", "WAITING_FOR_RETRY"] } },
      }),
    ).toBe(0);
    const demo = await a.prisma.order.findMany({ where: { number: { in: ["A-1001", "A-1002", "A-1003", "A-1004", "A-2001"] } } });
    expect(demo.every((o) => o.refundedCents === 0)).toBe(true);
    expect(
      await a.prisma.toolCall.count({
        where: {
          runId: { startsWith: "hist_" },
          gateFacts: { path: ["customerId"], string_contains: "cus" },
          NOT: { gateFacts: { path: ["customerId"], string_starts_with: "hist_" } },
        },
      }),
    ).toBe(0);
  });

  it("gives the metrics and the what-if something real to show", async () => {
    const acme = await a.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    const m = await shopMetrics(a.prisma, { tenantId: acme.id, role: "supervisor" }, resolvePeriod({ days: "30" }, NOW));
    expect(m.runs.runs).toBeGreaterThan(100);
    expect(m.resolvedByAgent.runs).toBeGreaterThan(20);
    expect(m.escalations.map((e) => e.reason).sort()).toEqual(["customer_request", "no_progress", "policy_ceiling", "policy_gap"]);
    expect(m.decisionTime.medianSeconds).toBeGreaterThan(0);
    expect(m.reviewers.length).toBeGreaterThanOrEqual(2);
    expect(m.expiries.runs).toBeGreaterThan(0);
    expect(m.deadLetters.runs).toBeGreaterThan(0);
    expect(m.refunds.auto.cents).toBeGreaterThan(0);
    expect(m.refunds.approved.cents).toBeGreaterThan(0);
    expect(m.refunds.denied.cents).toBeGreaterThan(0);
    expect(m.spend.micros).toBeGreaterThan(0);
    // Everything is in the past few weeks: nothing today, nothing before the history starts.
    expect(m.daily.slice(-1)[0]).toMatchObject({ resolved_by_agent: 0, spendUsd: 0 });
    const before = await shopMetrics(
      a.prisma,
      { tenantId: acme.id, role: "supervisor" },
      resolvePeriod({ from: "2026-10-01", to: "2026-11-03" }, NOW),
    );
    expect(before.runs.runs).toBe(0);
    expect(HISTORY_DAYS).toBe(27);

    // The admin's what-if replays the history's gated calls: lowering the automatic limit moves some refunds.
    const ada = await a.prisma.staffUser.findUniqueOrThrow({ where: { email: "ada@acme.test" } });
    const rules = structuredClone(DEMO_POLICY_RULES) as unknown as { refund: { autoMaxCents: number } };
    rules.refund.autoMaxCents = 3000;
    const report = await whatIf(a.prisma, { tenantId: acme.id, staffId: ada.id }, { rules, now: NOW });
    expect(report.total).toBeGreaterThan(100);
    expect(report.changed.total).toBeGreaterThan(0);
  });
});
