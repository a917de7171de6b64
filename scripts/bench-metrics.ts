/**
 * `npm run bench:metrics`: the metrics page's queries (lib/console/metrics.ts) on 100,000 runs of one shop (plus
 * 10,000 of another, which must not be read), built with bulk SQL in a dedicated database `support_bench_metrics`
 * that is reset first (embedded PostgreSQL, or DATABASE_URL's server). For the last 30 and 90 days it prints each
 * query's median time over several runs, the whole page's (the queries run concurrently, as the page runs them),
 * each query's execution time inside the server (EXPLAIN (ANALYZE, BUFFERS, TIMING OFF): no client round trip) with
 * the buffers it touched, the server's CPU time per execution when the server runs on this machine (user + system
 * time of its backend from /proc, parallel workers off: what the query costs whatever else the machine is doing —
 * the medians grow with the machine's load, this does not), and the plan node types and indexes each query uses (a
 * sequential scan names its table), with the machine's cores and load. Then the admin's what-if on the same shop
 * (lib/settings/what-if.ts): a draft judged against its recorded calls of the last 28 and 90 days — the whole
 * action, its read and its judging.
 */
import "./env-first"; // first: a bad variable stops here, with what to fix
import fs from "node:fs";
import os from "node:os";
import { performance } from "node:perf_hooks";
import { procStat } from "./proc";
process.env.SUPPORT_DB_NAME = process.env.SUPPORT_BENCH_METRICS_DB || "support_bench_metrics";
process.env.SUPPORT_SKIP_SEED = "1";

const { resetDatabase } = await import("@/lib/db/reset");
const { prepareDatabase } = await import("@/lib/setup/prepare");
const { createPrisma } = await import("@/lib/db/client");
const { seedDemo } = await import("@/lib/setup/seed");
const { stopEmbeddedIfOwner } = await import("@/lib/db/server");
const { METRICS_QUERIES, resolvePeriod, shopMetrics } = await import("@/lib/console/metrics");
const { Prisma } = await import("@/lib/db/prisma-types");
const pg = (await import("pg")).default;

const { env } = await import("@/lib/env");
const RUNS = env().BENCH_METRICS_RUNS;
const OTHER_SHOP_RUNS = Math.round(RUNS / 10);
const REPEAT = env().BENCH_METRICS_REPEAT;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const round = (ms: number) => Math.round(ms * 10) / 10;

await resetDatabase();
const { url } = await prepareDatabase();
// Its seeding statements write 100,000 runs each: no bound on how long one may take (SUPPORT_DB_ANSWER_MS).
const db = createPrisma(url, { max: 8, answerWithinMs: 0 });
await seedDemo(db);
const acme = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
const globex = await db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
const reviewers = (await db.staffUser.findMany({ where: { tenantId: acme.id }, orderBy: { email: "asc" } })).map((s) => s.id);

// ---------------------------------------------------------------------------------------------
// The data: one row per run with its dice, then every table from it (bulk SQL, deterministic seed).

const client = new pg.Client({ connectionString: url });
await client.connect();
const built = performance.now();
await client.query("SELECT setseed(0.42)");
await client.query(
  `CREATE UNLOGGED TABLE bench_runs AS
   SELECT g, CASE WHEN g <= $1::int THEN $3::text ELSE $4::text END AS tenant,
     now() - (random() * interval '90 days') AS started, random() AS kind, random() AS sub, random() AS wait,
     (array['customer_request', 'policy_gap', 'policy_ceiling', 'no_progress'])[1 + floor(random() * 4)::int] AS trigger,
     ($5::text[])[1 + floor(random() * $6::int)::int] AS reviewer
   FROM generate_series(1, $1::int + $2::int) g`,
  [RUNS, OTHER_SHOP_RUNS, acme.id, globex.id, reviewers, reviewers.length],
);
const statements: Array<[string, string]> = [
  [
    "Conversation",
    `INSERT INTO "Conversation" (id, "tenantId", "tokenHash", status, "createdAt", "updatedAt")
     SELECT 'bc' || g, tenant, 'bench-' || g, 'closed', started, started FROM bench_runs`,
  ],
  [
    "Run",
    `INSERT INTO "Run" (id, "tenantId", "conversationId", phase, outcome, "maxTurns", "tokenBudget", "policyVersion", "promptVersion",
       "toolsVersion", model, "startedAt", "endedAt", "updatedAt", "turnsUsed", "costMicros")
     SELECT 'br' || g, tenant, 'bc' || g,
       (CASE WHEN kind >= 0.995 THEN 'WAITING_FOR_APPROVAL' WHEN kind >= 0.975 THEN 'DEAD_LETTER' ELSE 'COMPLETED' END)::"RunPhase",
       CASE WHEN kind >= 0.975 AND kind < 0.995 THEN 'no_progress: the model could not be reached' WHEN kind < 0.975 THEN 'end_turn' END,
       12, 80000, 1, 'bench', 'bench', 'claude-sonnet-4-5', started, started + interval '40 seconds', started, 3, 0
     FROM bench_runs`,
  ],
  [
    "ToolCall",
    // Refunds: automatic (0.45–0.60), parked for a person (0.60–0.75, decided by `sub`); escalate_to_human calls.
    `INSERT INTO "ToolCall" (id, "tenantId", "runId", "toolUseId", name, input, "effectiveInput", status, "gateDecision", "gateReason",
       "decidedById", position, "messageSeq", "gateFacts", "createdAt", "updatedAt")
     SELECT 'bt' || g, tenant, 'br' || g, 'toolu_' || g, 'refund_order',
       jsonb_build_object('order_number', 'A-' || g, 'amount_cents', (1000 + floor(sub * 40000))::int, 'reason', 'damaged'),
       jsonb_build_object('order_number', 'A-' || g, 'amount_cents', (1000 + floor(sub * 40000))::int, 'reason', 'damaged'),
       (CASE WHEN kind < 0.60 THEN 'SUCCEEDED' WHEN kind >= 0.995 THEN 'PARKED' WHEN sub < 0.70 THEN 'SUCCEEDED'
             WHEN sub < 0.90 THEN 'DENIED' ELSE 'EXPIRED' END)::"ToolCallStatus",
       (CASE WHEN kind < 0.60 THEN 'allow' ELSE 'ask' END)::"GateOutcome", 'refund_policy: …',
       CASE WHEN kind >= 0.60 AND kind < 0.995 AND sub < 0.90 THEN reviewer END, 0, 2,
       jsonb_build_object('orderNumber', 'A-' || g, 'amountCents', (1000 + floor(sub * 40000))::int, 'orderStatus', 'delivered',
         'orderTotalCents', 60000, 'refundableCents', 60000, 'summary', 'Refund on A-' || g,
         'totals', jsonb_build_object('orderDoneCents', 0, 'orderPendingCents', 0, 'sameTurnCents', 0,
           'customerAutoCents', floor(wait * 5000)::int, 'customerPendingAutoCents', 0, 'windowDays', 30)),
       started, started
     FROM bench_runs WHERE (kind >= 0.45 AND kind < 0.75) OR kind >= 0.995
     UNION ALL
     SELECT 'be' || g, tenant, 'br' || g, 'toolu_e' || g, 'escalate_to_human', '{}'::jsonb, '{}'::jsonb, 'SUCCEEDED'::"ToolCallStatus", 'allow'::"GateOutcome", 'allowed',
       NULL, 0, 2, jsonb_build_object('summary', 'escalate_to_human'), started, started
     FROM bench_runs WHERE kind >= 0.75 AND kind < 0.975 AND trigger IN ('customer_request', 'policy_gap')
     UNION ALL
     SELECT 'bl' || g, tenant, 'br' || g, 'toolu_l' || g, 'lookup_order', jsonb_build_object('order_number', 'A-' || g), NULL,
       'SUCCEEDED'::"ToolCallStatus", 'allow'::"GateOutcome", 'allowed', NULL, 0, 2, jsonb_build_object('summary', 'lookup_order'), started, started
     FROM bench_runs WHERE kind < 0.45`,
  ],
  [
    "GateDecision",
    // What each gate said of each call (the runtime records every gate with a verdict): a what-if replays the
    // policy's gates and keeps the others'.
    `INSERT INTO "GateDecision" (id, "tenantId", "runId", "toolCallId", "toolUseId", gate, decision, reason, "policyVersion", "createdAt")
     SELECT tc.id || '_' || gate.name, tc."tenantId", tc."runId", tc.id, tc."toolUseId", gate.name,
       CASE WHEN gate.name = 'refund_policy' THEN tc."gateDecision" ELSE 'allow'::"GateOutcome" END, gate.name || ': …', 1, tc."createdAt"
     FROM "ToolCall" tc
     CROSS JOIN LATERAL (VALUES ('allowlist'), ('verified_customer'), ('refund_policy')) AS gate(name)
     WHERE gate.name <> 'refund_policy' OR tc.name = 'refund_order'`,
  ],
  [
    "Handoff",
    `INSERT INTO "Handoff" (id, "tenantId", "conversationId", "runId", "toolCallId", kind, status, payload, "amountCents", "decidedById",
       decision, "decidedAt", "createdAt", "updatedAt")
     SELECT 'bh' || g, tenant, 'bc' || g, 'br' || g, 'bt' || g, 'APPROVAL'::"HandoffKind",
       (CASE WHEN kind >= 0.995 THEN 'PENDING' WHEN sub < 0.55 THEN 'APPROVED' WHEN sub < 0.70 THEN 'EDITED' WHEN sub < 0.90 THEN 'DENIED'
             ELSE 'EXPIRED' END)::"HandoffStatus",
       jsonb_build_object('customer', NULL, 'asked', 'refund', 'tried', '[]'::jsonb, 'rootCause', '', 'amountCents', NULL,
         'recommendedAction', '', 'reason', 'band', 'trigger', 'approval_required', 'orderNumber', 'A-' || g),
       (1000 + floor(sub * 40000))::int,
       CASE WHEN kind < 0.995 AND sub < 0.90 THEN reviewer END,
       CASE WHEN kind < 0.995 THEN 'decided' END,
       CASE WHEN kind < 0.995 THEN started + interval '10 seconds' + wait * wait * interval '10 hours' END,
       started + interval '10 seconds', started
     FROM bench_runs WHERE (kind >= 0.60 AND kind < 0.75) OR kind >= 0.995
     UNION ALL
     SELECT 'bx' || g, tenant, 'bc' || g, 'br' || g, NULL, 'ESCALATION'::"HandoffKind", 'RESOLVED'::"HandoffStatus",
       jsonb_build_object('customer', NULL, 'asked', 'help', 'tried', '[]'::jsonb, 'rootCause', '', 'amountCents', NULL,
         'recommendedAction', '', 'reason', trigger, 'trigger', CASE WHEN kind >= 0.975 THEN 'no_progress' ELSE trigger END, 'orderNumber', NULL),
       NULL, reviewer, 'resolved', started + interval '1 hour', started, started
     FROM bench_runs WHERE kind >= 0.75 AND kind < 0.995`,
  ],
  [
    "ModelCall",
    `INSERT INTO "ModelCall" (id, "tenantId", "runId", turn, model, "stopReason", "inputTokens", "outputTokens", "costMicros", "maxTokens",
       "latencyMs", "throughSeq", "createdAt")
     SELECT 'bm' || g || '_' || t, tenant, 'br' || g, t, 'claude-sonnet-4-5', CASE WHEN t = 3 THEN 'end_turn' ELSE 'tool_use' END,
       2000 + t * 400, 120, 9000 + (g % 7) * 1000, 1024, 1500, t, started
     FROM bench_runs, generate_series(1, 3) t`,
  ],
];
const counts: Record<string, number> = {};
for (const [table, statement] of statements) counts[table] = (await client.query(statement)).rowCount ?? 0;
await client.query(
  `UPDATE "Run" r SET "costMicros" = m.c FROM (SELECT "runId", sum("costMicros")::int c FROM "ModelCall" GROUP BY 1) m WHERE m."runId" = r.id`,
);
await client.query("DROP TABLE bench_runs");
await client.query("VACUUM ANALYZE");
const buildMs = performance.now() - built;

// ---------------------------------------------------------------------------------------------
// The measurements

const viewer = { tenantId: acme.id, role: "supervisor" as const };
type Query = (db: unknown, tenantId: string, p: ReturnType<typeof resolvePeriod>) => Promise<unknown>;

/**
 * The CPU time (user + system, ms) the server process behind `client` has used so far, or null when it cannot be read
 * here (not Linux, or the server is on another machine). Linux counts it in clock ticks (10 ms).
 */
async function serverCpuReader(c: InstanceType<typeof pg.Client>): Promise<() => number | null> {
  const pid = (await c.query("SELECT pg_backend_pid() AS pid")).rows[0].pid as number;
  const read = () => {
    try {
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("postgres")) return null;
      return procStat(pid)?.ownMs ?? null;
    } catch {
      return null;
    }
  };
  return read;
}
const serverCpu = await serverCpuReader(client);
const CPU_REPEAT = Math.max(REPEAT, 20);

/** The statement a query function sends (captured, not run), for EXPLAIN. */
async function statementOf(fn: Query, period: ReturnType<typeof resolvePeriod>) {
  let captured: InstanceType<typeof Prisma.Sql> | null = null;
  const capture = {
    $queryRaw: (strings: TemplateStringsArray, ...values: unknown[]) => {
      captured = Prisma.sql(strings, ...(values as Parameters<typeof Prisma.sql>[1][]));
      return Promise.resolve([]);
    },
  };
  await fn(capture, acme.id, period);
  return captured!;
}

function planFacts(plan: unknown): { nodes: string[]; indexes: string[]; explainMs: number; buffers: number } {
  const nodes = new Set<string>();
  const indexes = new Set<string>();
  const walk = (n: Record<string, unknown>) => {
    const type = String(n["Node Type"]);
    nodes.add(
      n.Strategy && type === "Aggregate"
        ? `${type} (${n.Strategy})`
        : type === "Seq Scan"
          ? `Seq Scan (${String(n["Relation Name"])})`
          : type,
    );
    if (n["Index Name"]) indexes.add(String(n["Index Name"]));
    for (const child of (n.Plans as Array<Record<string, unknown>>) ?? []) walk(child);
  };
  const top = (plan as Array<{ Plan: Record<string, unknown>; "Execution Time": number }>)[0]!;
  walk(top.Plan);
  const buffers = Number(top.Plan["Shared Hit Blocks"] ?? 0) + Number(top.Plan["Shared Read Blocks"] ?? 0);
  return { nodes: [...nodes].sort(), indexes: [...indexes].sort(), explainMs: top["Execution Time"], buffers };
}

const results: Array<Record<string, unknown>> = [];
for (const days of ["30", "90"] as const) {
  const period = resolvePeriod({ days, tz: "UTC" });
  for (const [name, fn] of Object.entries(METRICS_QUERIES) as Array<[string, Query]>) {
    await fn(db, acme.id, period); // warm
    const times: number[] = [];
    for (let i = 0; i < REPEAT; i++) {
      const t0 = performance.now();
      await fn(db, acme.id, period);
      times.push(performance.now() - t0);
    }
    const statement = await statementOf(fn, period);
    const explained: Array<ReturnType<typeof planFacts>> = [];
    for (let i = 0; i < REPEAT; i++) {
      const out = await client.query(
        `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) ${statement.text}`,
        statement.values as unknown[],
      );
      explained.push(planFacts(out.rows[0]["QUERY PLAN"]));
    }
    const plan = explained[0]!;
    await client.query("SET max_parallel_workers_per_gather = 0");
    const cpu0 = serverCpu();
    for (let i = 0; i < CPU_REPEAT; i++) await client.query(statement.text, statement.values as unknown[]);
    const cpu1 = serverCpu();
    await client.query("RESET max_parallel_workers_per_gather");
    const cpuMs = cpu0 === null || cpu1 === null ? null : round((cpu1 - cpu0) / CPU_REPEAT);
    results.push({
      period: `${days} days`,
      query: name,
      medianMs: round(median(times)),
      explainMs: round(median(explained.map((e) => e.explainMs))),
      cpuMs,
      buffers: plan.buffers,
      nodes: plan.nodes,
      indexes: plan.indexes,
    });
  }
  const times: number[] = [];
  for (let i = 0; i < REPEAT; i++) {
    const t0 = performance.now();
    await shopMetrics(db, viewer, period);
    times.push(performance.now() - t0);
  }
  const m = await shopMetrics(db, viewer, period);
  results.push({ period: `${days} days`, query: "whole page (concurrently)", medianMs: round(median(times)), runsInPeriod: m.runs.runs });
}

// The admin's what-if (lib/settings/what-if.ts) on the same shop: its recorded calls of the last 28 (the default) and
// 90 days (the most) judged again under a draft that lowers the automatic refund limit — the read (one query) and the
// judging (in memory) timed apart, then the whole action as the settings page runs it.
const { whatIf, callsToJudge, compareWithDraft, WHAT_IF_MAX_CALLS } = await import("@/lib/settings/what-if");
const { DEMO_POLICY_RULES } = await import("@/lib/setup/seed");
const admin = await db.staffUser.findFirstOrThrow({ where: { tenantId: acme.id, role: "admin" } });
const { policyRulesSchema } = await import("@/lib/policy/policy");
const current = policyRulesSchema.parse(DEMO_POLICY_RULES);
const draft = { ...current, refund: { ...current.refund, autoMaxCents: 8000 } };
const whatIfs: Array<{
  days: number;
  calls: number;
  changed: number;
  truncated: boolean;
  readMs: number;
  judgeMs: number;
  wholeMs: number;
}> = [];
for (const days of [28, 90]) {
  const since = new Date(Date.now() - days * 86_400_000);
  const reads: number[] = [];
  const judged: number[] = [];
  const wholes: number[] = [];
  let report: Awaited<ReturnType<typeof whatIf>> | null = null;
  await whatIf(db, { tenantId: acme.id, staffId: admin.id }, { rules: draft, days }); // warm
  for (let i = 0; i < REPEAT; i++) {
    const t0 = performance.now();
    const { calls } = await callsToJudge(db, acme.id, since); // the action's own read and cut
    const t1 = performance.now();
    compareWithDraft(calls, draft);
    const t2 = performance.now();
    report = await whatIf(db, { tenantId: acme.id, staffId: admin.id }, { rules: draft, days });
    wholes.push(performance.now() - t2);
    reads.push(t1 - t0);
    judged.push(t2 - t1);
  }
  whatIfs.push({
    days,
    calls: report!.total + report!.skipped,
    changed: report!.changed.total,
    truncated: report!.truncated,
    readMs: round(median(reads)),
    judgeMs: round(median(judged)),
    wholeMs: round(median(wholes)),
  });
}

const machine = { cores: os.cpus().length, cpu: os.cpus()[0]?.model, loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100) };
const server = (await client.query("SHOW server_version")).rows[0].server_version as string;
console.log(
  JSON.stringify(
    {
      runs: RUNS,
      otherShopRuns: OTHER_SHOP_RUNS,
      rows: counts,
      buildSeconds: round(buildMs / 1000),
      repeat: REPEAT,
      postgres: server,
      machine,
    },
    null,
    2,
  ),
);
console.log("\nperiod    query                       median ms  explain ms  cpu ms  buffers  plan nodes  [indexes]");
const cell = (v: unknown, width: number) => String(v ?? "–").padStart(width);
for (const r of results) {
  // The page's CPU: the sum of its queries' (they run concurrently, on as many cores as the machine has).
  const cpu = r.nodes
    ? r.cpuMs
    : results.filter((q) => q.period === r.period && q.nodes).some((q) => q.cpuMs === null)
      ? null
      : round(results.filter((q) => q.period === r.period && q.nodes).reduce((sum, q) => sum + Number(q.cpuMs), 0));
  console.log(
    `${String(r.period).padEnd(9)} ${String(r.query).padEnd(27)} ${cell(r.medianMs, 9)}  ${cell(r.explainMs, 10)}  ${cell(cpu, 6)}  ${
      r.nodes
        ? `${cell(r.buffers, 7)}  ${(r.nodes as string[]).join(", ")}  [${(r.indexes as string[]).join(", ")}]`
        : `${"".padStart(7)}  (${r.runsInPeriod} runs in the period; cpu: the sum of its queries')`
    }`,
  );
}

console.log("\nwhat-if (admin): a draft judged against the shop's recorded calls (median ms of the whole action, its read, its judging)");
for (const w of whatIfs)
  console.log(
    `${`${w.days} days`.padEnd(9)} ${String(w.calls).padStart(6)} calls${w.truncated ? ` (the newest ${WHAT_IF_MAX_CALLS})` : ""}, ${w.changed} change: ` +
      `${w.wholeMs} ms (read ${w.readMs}, judged again ${w.judgeMs})`,
  );

await client.end();
await db.$disconnect();
await stopEmbeddedIfOwner();
process.exit(0);
