import "server-only";
import { z } from "zod";
import { Prisma, type PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { assertSupervisor, type Viewer } from "./access";
import { ESCALATION_REASON_LABEL } from "./metrics-labels";
import { addDays, dayIn, dayRange, parseDay } from "./dates";
import { dayField, emptyToUndefined, timeZoneField } from "./url-fields";
import { RUN_OUTCOMES, type RunOutcome } from "./run-outcome";
import { type RunFilter, runFilterToParams } from "./runs";

// The supervisor's metrics over a period: what the agent resolved alone, why it escalated, how fast people decided
// and how, the money refunded by whom, expiries, dead letters and model spend. Every figure is counted over the runs
// STARTED in the period (the runs list's date filter), and every figure comes with the runs list filter that finds
// exactly the runs behind it — counted the same way (a run counts once per figure). Supervisors and admins only,
// checked here. Each query reads the shop's runs in the period and its handoffs, tool calls and model calls from
// indexes alone, and joins them on the run (see "The queries" below, and `npm run bench:metrics`).

export const PERIOD_PRESETS = [7, 30, 90] as const;
/** A custom period is at most this many days. */
export const MAX_PERIOD_DAYS = 366;

/** The period as it appears in the URL: a preset (?days=30) or a custom range (?from=…&to=…), in the zone `tz`. */
export const metricsPeriodSchema = z
  .object({
    days: z.preprocess(emptyToUndefined, z.enum(PERIOD_PRESETS.map(String) as ["7", "30", "90"]).optional()),
    from: dayField("From"),
    to: dayField("To"),
    tz: timeZoneField(),
  })
  .refine((p) => !p.from || !p.to || p.from <= p.to, { message: "The start date is after the end date.", path: ["to"] })
  .refine((p) => !(p.from || p.to) || (p.from && p.to), { message: "A custom period needs both a start and an end date.", path: ["from"] })
  .refine((p) => !p.from || !p.to || !parseDay(p.from) || !parseDay(p.to) || addDays(p.from, MAX_PERIOD_DAYS - 1) >= p.to, {
    message: `A period is at most ${MAX_PERIOD_DAYS} days.`,
    path: ["to"],
  });
export type MetricsPeriodInput = z.input<typeof metricsPeriodSchema>;

/** A resolved period: whole calendar days in `tz`, and the instants they cover. */
export interface MetricsPeriod {
  preset: (typeof PERIOD_PRESETS)[number] | null;
  from: string;
  to: string;
  tz: string;
  start: Date;
  end: Date;
  days: number;
}

/** The period a URL asks for (default: the last 30 days, today included, in the viewer's zone). */
export function resolvePeriod(raw: unknown, now = new Date()): MetricsPeriod {
  const parsed = metricsPeriodSchema.safeParse(raw);
  if (!parsed.success) throw new AppError("INVALID_INPUT", parsed.error.issues.map((i) => i.message).join(" "));
  const p = parsed.data;
  const tz = p.tz ?? "UTC";
  let from: string;
  let to: string;
  let preset: MetricsPeriod["preset"] = null;
  if (p.from && p.to) {
    from = p.from;
    to = p.to;
  } else {
    preset = Number(p.days ?? 30) as MetricsPeriod["preset"];
    to = dayIn(now, tz);
    from = addDays(to, -(preset! - 1));
  }
  const range = dayRange(from, to, tz);
  const days = Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
  return { preset, from, to, tz, start: range.gte!, end: range.lt!, days };
}

/** A figure's drill-down: the runs list filter (the period's days and zone, plus what the figure counts). */
export type Drill = Partial<Pick<RunFilter, "outcome" | "reason" | "decision" | "reviewer" | "refund">>;

/** The runs list URL that opens exactly the runs behind a figure. */
export function drillHref(period: MetricsPeriod, drill: Drill = {}): string {
  const params = runFilterToParams({ from: period.from, to: period.to, tz: period.tz, ...drill, outcome: drill.outcome ?? "all" });
  return `/console/runs?${params}`;
}

// ---------------------------------------------------------------------------------------------
// The queries
//
// Fast on a shop with 100,000 runs (`npm run bench:metrics`). A period holds a third to all of a shop's runs, so a
// query can afford neither to visit the runs one by one (an index probe per run) nor to read whole tables (every
// shop's rows). Each query reads narrow indexes that lead with the shop — index-only scans, never the tables of runs,
// handoffs, calls — and hash-joins them on the run's id:
//   - the period's runs: "Run"("tenantId", "startedAt", id, "conversationId", phase);
//   - the shop's handoffs: "Handoff"("tenantId", kind, status, "runId", "decidedById", "decidedAt", "createdAt"), and
//     its escalations with their reason: "Handoff_escalations_by_tenant" ("tenantId", "runId", "trigger");
//   - the shop's escalate_to_human and refund calls: "ToolCall_escalations_by_tenant" ("tenantId", "runId") and
//     "ToolCall_refunds_by_tenant" ("tenantId", "runId") INCLUDE (status, "decidedById", "amountCents");
//   - the shop's model calls: "ModelCall"("tenantId", "runId", "costMicros");
//   - the runs whose reply was suppressed: "Run_suppressed_by_tenant" ("tenantId", "startedAt") INCLUDE (id) WHERE
//     outcome LIKE 'end_turn (suppressed%' (Run.outcome is never indexed whole: it can be long).
// The partial indexes are in migration metrics_indexes. The figures read out of JSON — an escalation's reason
// (payload.trigger), a refund's amount (amount_cents of effectiveInput, else input) — are stored generated columns,
// "Handoff"."trigger" and "ToolCall"."amountCents": computed by PostgreSQL in the very write that changes the JSON,
// so they cannot drift from it, and indexable.
// The rows of the per-run tables are read for the whole shop (not only the period's runs) and matched to the
// period's runs in one hash join: cheaper than looking each run's rows up, and another shop's rows are never read.
// No query reads a CTE twice (nothing is materialised); days are the period's own day boundaries (width_bucket,
// a binary search per run, instead of time zone arithmetic per run); per-day rows are left unordered (asking for
// them in order makes the planner sort every run rather than hash a few hundred groups); text is compared
// byte-wise (COLLATE "C") where only equality matters (count(DISTINCT)); a run counts once per figure (joins to the
// runs' unique ids never fan out; count(DISTINCT) where a run can have several rows).
// The indexed columns change only when a run changes phase or a handoff is decided, writes that already rewrite
// index entries ("Run"(phase, …), "Handoff"(…, status, …)): the runtime's frequent updates stay HOT.

// Why some reads below ask for an order nobody needs (ORDER BY the index's columns): with PostgreSQL's default cost of
// a random page read (random_page_cost = 4, made for spinning disks), reading most of an index — and indexes that
// grew by random inserts are half empty — looks dearer than reading the whole table, even one holding another
// shop's rows, and the planner picks the table for a long period. Reading the index is in fact faster (the bench
// shows both), and asking for its order tips the choice: the table would have to be sorted. It costs nothing, the
// index returns its rows in that order anyway.

/** The instant each day of the period starts, in its zone (the first is `start`). */
export function periodDayStarts(p: Pick<MetricsPeriod, "from" | "to" | "tz">): Date[] {
  const starts: Date[] = [];
  for (let d = p.from; d <= p.to; d = addDays(d, 1)) starts.push(dayRange(d, d, p.tz).gte!);
  return starts;
}

/** The day of the period a run started on, as 1 for the first day, 2 for the second… */
function runDay(p: MetricsPeriod): Prisma.Sql {
  // Sent as text: timestamps with their "Z", which a `timestamp without time zone` reads as the UTC wall time the
  // columns hold (as Prisma sends a Date).
  const starts = periodDayStarts(p).map((d) => d.toISOString());
  return Prisma.sql`width_bucket("startedAt", ${starts}::timestamp[])`;
}

/**
 * The shop's runs started in the period: every query starts here (index-only on "Run"("tenantId", "startedAt", …)).
 * `day`: the day of the period the run started on (see runDay), computed once per run, not per joined row (a query
 * that does not use it does not compute it).
 */
function periodRuns(tenantId: string, p: MetricsPeriod): Prisma.Sql {
  return Prisma.sql`SELECT id, "conversationId", phase, "startedAt", ${runDay(p)} AS day FROM "Run"
    WHERE "tenantId" = ${tenantId} AND "startedAt" >= ${p.start} AND "startedAt" < ${p.end}
    ORDER BY "startedAt"`;
}

/**
 * The runs of the shop that involved a person, with what happened: one row per run that has a handoff, a
 * successful escalate_to_human call or a reply suppressed because a person had taken the conversation over (a run
 * without any has no row). `escalated`: an escalation handoff, the call or the suppressed reply; `expired`, `denied`,
 * `approved`: an approval in that state.
 */
function personRuns(tenantId: string, p: MetricsPeriod): Prisma.Sql {
  return Prisma.sql`
    SELECT "runId", bool_or(escalated) AS escalated, bool_or(expired) AS expired, bool_or(denied) AS denied,
      bool_or(approved) AS approved
    FROM (
      (SELECT "runId", kind = 'ESCALATION' AS escalated, kind = 'APPROVAL' AND status = 'EXPIRED' AS expired,
        kind = 'APPROVAL' AND status = 'DENIED' AS denied, kind = 'APPROVAL' AND status IN ('APPROVED', 'EDITED') AS approved
      FROM "Handoff" WHERE "tenantId" = ${tenantId} AND "runId" IS NOT NULL
      ORDER BY kind, status, "runId")
      UNION ALL
      SELECT "runId", true, false, false, false FROM "ToolCall"
      WHERE "tenantId" = ${tenantId} AND name = 'escalate_to_human' AND status = 'SUCCEEDED'
      UNION ALL
      SELECT id, true, false, false, false FROM "Run"
      WHERE "tenantId" = ${tenantId} AND "startedAt" >= ${p.start} AND "startedAt" < ${p.end}
        AND outcome LIKE 'end_turn (suppressed%'
    ) x
    GROUP BY "runId"`;
}

/**
 * What each run came to, in SQL: the rules of lib/console/run-outcome.ts in the same order (first match wins), over
 * the run's phase and its row `f` of personRuns (none: nobody was involved).
 */
const OUTCOME_CASE = Prisma.sql`CASE
  WHEN r.phase IN ('RUNNING', 'WAITING_FOR_RETRY') THEN 'running'
  WHEN r.phase = 'WAITING_FOR_APPROVAL' THEN 'waiting'
  WHEN r.phase = 'DEAD_LETTER' THEN 'dead_letter'
  WHEN r.phase = 'ESCALATED' OR coalesce(f.escalated, false) THEN 'escalated'
  WHEN coalesce(f.expired, false) THEN 'expired'
  WHEN coalesce(f.denied, false) THEN 'denied'
  WHEN coalesce(f.approved, false) THEN 'approved'
  ELSE 'resolved_by_agent' END`;

export type SqlRunner = Pick<PrismaTx, "$queryRaw">;

async function outcomeRows(db: SqlRunner, tenantId: string, p: MetricsPeriod) {
  return db.$queryRaw<Array<{ day: number; outcome: RunOutcome; runs: number }>>`
    WITH r AS (${periodRuns(tenantId, p)})
    SELECT r.day, ${OUTCOME_CASE} AS outcome, count(*)::int AS runs
    FROM r LEFT JOIN (${personRuns(tenantId, p)}) f ON f."runId" = r.id
    GROUP BY 1, 2`;
}

async function conversationRows(db: SqlRunner, tenantId: string, p: MetricsPeriod) {
  // Conversations with a run in the period, and those with a completed run none of whose runs (in the period)
  // needed a person: escalated, dead-lettered, with a handoff, an escalate_to_human call or a suppressed reply.
  const [row] = await db.$queryRaw<Array<{ all: number; alone: number }>>`
    WITH r AS (${periodRuns(tenantId, p)})
    SELECT count(*)::int AS all, count(*) FILTER (WHERE completed AND NOT people)::int AS alone FROM (
      SELECT bool_or(r.phase = 'COMPLETED') AS completed,
        bool_or(r.phase IN ('ESCALATED', 'DEAD_LETTER') OR f."runId" IS NOT NULL) AS people
      FROM r LEFT JOIN (${personRuns(tenantId, p)}) f ON f."runId" = r.id
      GROUP BY r."conversationId"
    ) v`;
  return row ?? { all: 0, alone: 0 };
}

async function escalationRows(db: SqlRunner, tenantId: string, p: MetricsPeriod) {
  return db.$queryRaw<Array<{ reason: string; runs: number }>>`
    WITH r AS (${periodRuns(tenantId, p)})
    SELECT reason, count(*)::int AS runs FROM (
      SELECT DISTINCT coalesce(h."trigger", 'unknown') AS reason, h."runId"
      FROM r JOIN "Handoff" h ON h."runId" = r.id
      WHERE h."tenantId" = ${tenantId} AND h.kind = 'ESCALATION'
    ) e
    GROUP BY 1 ORDER BY 2 DESC, 1`;
}

async function decisionTimeRows(db: SqlRunner, tenantId: string, p: MetricsPeriod) {
  const [row] = await db.$queryRaw<Array<{ decisions: number; runs: number; median_s: number | null; p90_s: number | null }>>`
    WITH r AS (${periodRuns(tenantId, p)})
    SELECT count(*)::int AS decisions, count(DISTINCT h."runId" COLLATE "C")::int AS runs,
      percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM h."decidedAt" - h."createdAt"))::float8 AS median_s,
      percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM h."decidedAt" - h."createdAt"))::float8 AS p90_s
    FROM r JOIN "Handoff" h ON h."runId" = r.id
    WHERE h."tenantId" = ${tenantId} AND h.kind = 'APPROVAL'
      AND h.status IN ('APPROVED', 'EDITED', 'DENIED') AND h."decidedById" IS NOT NULL AND h."decidedAt" IS NOT NULL`;
  return row ?? { decisions: 0, runs: 0, median_s: null, p90_s: null };
}

async function reviewerRows(db: SqlRunner, tenantId: string, p: MetricsPeriod) {
  // Each person's decisions of each kind, per run first (a run counts once), then per person and kind.
  return db.$queryRaw<Array<{ staffId: string | null; name: string | null; status: string; runs: number; decisions: number }>>`
    WITH r AS (${periodRuns(tenantId, p)})
    SELECT d."decidedById" AS "staffId", s.name, d.status::text AS status, count(*)::int AS runs, sum(d.n)::int AS decisions
    FROM (
      SELECT h."decidedById", h.status, h."runId", count(*) AS n
      FROM r JOIN "Handoff" h ON h."runId" = r.id
      WHERE h."tenantId" = ${tenantId} AND h.kind = 'APPROVAL'
        AND ((h.status IN ('APPROVED', 'EDITED', 'DENIED') AND h."decidedById" IS NOT NULL) OR h.status = 'EXPIRED')
      GROUP BY 1, 2, 3
    ) d LEFT JOIN "StaffUser" s ON s.id = d."decidedById" AND s."tenantId" = ${tenantId}
    GROUP BY 1, 2, 3`;
}

async function expiredRuns(db: SqlRunner, tenantId: string, p: MetricsPeriod): Promise<number> {
  // Few rows: each expired approval's run is looked up by its id (Run_pkey) rather than all the period's runs read.
  const [row] = await db.$queryRaw<Array<{ runs: number }>>`
    SELECT count(DISTINCT h."runId" COLLATE "C")::int AS runs
    FROM "Handoff" h JOIN "Run" r ON r.id = h."runId"
    WHERE h."tenantId" = ${tenantId} AND h.kind = 'APPROVAL' AND h.status = 'EXPIRED'
      AND r."tenantId" = ${tenantId} AND r."startedAt" >= ${p.start} AND r."startedAt" < ${p.end}`;
  return row?.runs ?? 0;
}

async function refundRows(db: SqlRunner, tenantId: string, p: MetricsPeriod) {
  // status IN (…) repeats what the OR implies, so that the planner sees the partial index's condition.
  // "amountCents" is amount_cents of effectiveInput (else input), when an integer: what the refund ran with.
  // Per run first (a run counts once), then per kind.
  return db.$queryRaw<Array<{ kind: "auto" | "approved" | "denied"; runs: number; calls: number; cents: number }>>`
    WITH r AS (${periodRuns(tenantId, p)})
    SELECT kind, count(*)::int AS runs, sum(calls)::int AS calls, sum(cents)::float8 AS cents FROM (
      SELECT CASE
          WHEN c.status = 'SUCCEEDED' AND c."decidedById" IS NULL THEN 'auto'
          WHEN c.status = 'SUCCEEDED' THEN 'approved'
          ELSE 'denied' END AS kind,
        c."runId", count(*) AS calls, sum(coalesce(c."amountCents", 0)) AS cents
      FROM r JOIN "ToolCall" c ON c."runId" = r.id
      WHERE c."tenantId" = ${tenantId} AND c.name = 'refund_order' AND c.status IN ('SUCCEEDED', 'DENIED')
        AND (c.status = 'SUCCEEDED' OR (c.status = 'DENIED' AND c."decidedById" IS NOT NULL))
      GROUP BY 1, 2
    ) c
    GROUP BY kind`;
}

async function spendRows(db: SqlRunner, tenantId: string, p: MetricsPeriod) {
  return db.$queryRaw<Array<{ day: number; micros: number; calls: number }>>`
    WITH r AS (${periodRuns(tenantId, p)})
    SELECT r.day, sum(m."costMicros")::float8 AS micros, count(*)::int AS calls
    FROM r JOIN (
      SELECT "runId", "costMicros" FROM "ModelCall" WHERE "tenantId" = ${tenantId} ORDER BY "runId"
    ) m ON m."runId" = r.id
    GROUP BY 1`;
}

/** The metrics page's queries by name (the benchmark times each one). */
export const METRICS_QUERIES = {
  outcomes: outcomeRows,
  conversations: conversationRows,
  escalations: escalationRows,
  decisionTime: decisionTimeRows,
  reviewers: reviewerRows,
  expiries: expiredRuns,
  refunds: refundRows,
  spend: spendRows,
} as const;

// ---------------------------------------------------------------------------------------------
// The page's figures

const REVIEW_KINDS = ["approved", "edited", "denied"] as const;
type ReviewKind = (typeof REVIEW_KINDS)[number];

/** A figure and the runs behind it. */
export interface Figure {
  runs: number;
  href: string;
}

/**
 * Every figure of the metrics page for `viewer`'s shop over `period`. Supervisors and admins only.
 * Numbers are plain JSON (dates as strings) so a client chart can take them as they are.
 */
export async function shopMetrics(db: SqlRunner, viewer: Viewer, period: MetricsPeriod) {
  assertSupervisor(viewer);
  const t = viewer.tenantId;
  const [outcomes, conversations, escalations, decisionTime, reviewers, expiries, refunds, spend] = await Promise.all([
    outcomeRows(db, t, period),
    conversationRows(db, t, period),
    escalationRows(db, t, period),
    decisionTimeRows(db, t, period),
    reviewerRows(db, t, period),
    expiredRuns(db, t, period),
    refundRows(db, t, period),
    spendRows(db, t, period),
  ]);

  const byOutcome = Object.fromEntries(RUN_OUTCOMES.map((o) => [o, 0])) as Record<RunOutcome, number>;
  for (const row of outcomes) byOutcome[row.outcome] += row.runs;
  const totalRuns = Object.values(byOutcome).reduce((a, b) => a + b, 0);
  const finished = totalRuns - byOutcome.running - byOutcome.waiting;

  // One row per day of the period (empty days included, so a chart's axis is the whole period).
  const days: string[] = [];
  for (let d = period.from; d <= period.to; d = addDays(d, 1)) days.push(d);
  const daily = days.map((d) => {
    const row: Record<string, number | string> = { day: d, spendUsd: 0, modelCalls: 0 };
    for (const o of RUN_OUTCOMES) row[o] = 0;
    return row;
  });
  // The queries number the period's days from 1.
  for (const r of outcomes) {
    const row = daily[r.day - 1];
    if (row) (row[r.outcome] as number) += r.runs;
  }
  let spendMicros = 0;
  let modelCalls = 0;
  for (const r of spend) {
    spendMicros += r.micros;
    modelCalls += r.calls;
    const row = daily[r.day - 1];
    if (row) {
      row.spendUsd = r.micros / 1_000_000;
      row.modelCalls = r.calls;
    }
  }

  const people = new Map<string, { staffId: string; name: string } & Record<ReviewKind, Figure>>();
  for (const r of reviewers) {
    if (!r.staffId || r.status === "EXPIRED") continue;
    let person = people.get(r.staffId);
    if (!person) {
      const staffId = r.staffId;
      const fig = (decision: ReviewKind): Figure => ({ runs: 0, href: drillHref(period, { decision, reviewer: staffId }) });
      person = { staffId, name: r.name ?? "A former colleague", approved: fig("approved"), edited: fig("edited"), denied: fig("denied") };
      people.set(r.staffId, person);
    }
    const kind = r.status.toLowerCase() as ReviewKind;
    person[kind].runs += r.runs;
  }

  const refund = (kind: "auto" | "approved" | "denied") => {
    const row = refunds.find((r) => r.kind === kind);
    return { cents: row?.cents ?? 0, calls: row?.calls ?? 0, runs: row?.runs ?? 0, href: drillHref(period, { refund: kind }) };
  };

  return {
    period: { ...period, start: period.start.toISOString(), end: period.end.toISOString() },
    runs: { runs: totalRuns, finished, href: drillHref(period) },
    outcomes: RUN_OUTCOMES.map((o) => ({ outcome: o, runs: byOutcome[o], href: drillHref(period, { outcome: o }) })),
    resolvedByAgent: { runs: byOutcome.resolved_by_agent, finished, href: drillHref(period, { outcome: "resolved_by_agent" }) },
    conversations: { all: conversations.all, resolvedWithoutPerson: conversations.alone },
    escalations: escalations.map((e) => ({
      reason: e.reason,
      label: ESCALATION_REASON_LABEL[e.reason] ?? e.reason.replace(/_/g, " "),
      runs: e.runs,
      href: drillHref(period, { reason: e.reason }),
    })),
    decisionTime: {
      decisions: decisionTime.decisions,
      runs: decisionTime.runs,
      medianSeconds: decisionTime.median_s,
      p90Seconds: decisionTime.p90_s,
      href: drillHref(period, { decision: "decided" }),
    },
    reviewers: [...people.values()].sort((a, b) => a.name.localeCompare(b.name)),
    expiries: { runs: expiries, href: drillHref(period, { decision: "expired" }) },
    deadLetters: { runs: byOutcome.dead_letter, href: drillHref(period, { outcome: "dead_letter" }) },
    refunds: { auto: refund("auto"), approved: refund("approved"), denied: refund("denied") },
    spend: { micros: spendMicros, modelCalls, href: drillHref(period) },
    daily,
  };
}
export type ShopMetrics = Awaited<ReturnType<typeof shopMetrics>>;
