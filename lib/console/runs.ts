import "server-only";
import { z } from "zod";
import { Prisma, type PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { callAmong } from "@/lib/handoffs/calls";
import { parseHandoffPayload } from "@/lib/handoffs/record";
import { runDetail } from "@/lib/runs/detail";
import { assertSupervisor, type Viewer } from "./access";
import { csvRow } from "./csv";
import { dayRange } from "./dates";
import { dayField, emptyToUndefined, timeZoneField } from "./url-fields";
import { decidedSummary, type DecisionFacts } from "./decision-words";
import { jsonify } from "./json";
import { staffNames } from "@/lib/staff-names";
import { consoleHandoff } from "./queries";
import { RUN_OUTCOMES, RUN_OUTCOME_LABEL, runOutcome, runOutcomeWhere } from "./run-outcome";

// Runs a supervisor can search: by order number, customer email, conversation (or run) id, date range and
// outcome — filtered and paged in the database (keyset on startedAt, id), each row with its customer, orders,
// outcome, handoffs and the people who decided them. The export streams the same filtered rows. Supervisors and
// admins only, checked here as well as on the pages and routes.

export const RUNS_PAGE = 50;
const EXPORT_PAGE = 200;
/** A search term matches at most this many runs through one order number (a bound, not a page). */
const ORDER_MATCH_LIMIT = 2000;

export const DRILL_DECISIONS = ["approved", "edited", "denied", "expired", "decided"] as const;
export const DRILL_REFUNDS = ["auto", "approved", "denied"] as const;

const DECISION_STATUSES: Record<(typeof DRILL_DECISIONS)[number], Array<"APPROVED" | "EDITED" | "DENIED" | "EXPIRED">> = {
  approved: ["APPROVED"],
  edited: ["EDITED"],
  denied: ["DENIED"],
  expired: ["EXPIRED"],
  decided: ["APPROVED", "EDITED", "DENIED"],
};

/**
 * The drill-down filters as a `where` (see the schema below). lib/console/metrics.ts counts with the same rules in
 * SQL; a test checks that every number there matches the runs these filters find.
 */
function drillWhere(f: Pick<RunFilter, "reason" | "decision" | "reviewer" | "refund">): Prisma.RunWhereInput[] {
  const and: Prisma.RunWhereInput[] = [];
  if (f.reason) and.push({ handoffs: { some: { kind: "ESCALATION", payload: { path: ["trigger"], equals: f.reason } } } });
  if (f.decision || f.reviewer) {
    const statuses = DECISION_STATUSES[f.decision ?? "decided"];
    and.push({
      handoffs: {
        some: {
          kind: "APPROVAL",
          status: { in: statuses },
          ...(f.reviewer ? { decidedById: f.reviewer } : f.decision === "expired" ? {} : { decidedById: { not: null } }),
        },
      },
    });
  }
  if (f.refund === "auto") and.push({ toolCalls: { some: { name: "refund_order", status: "SUCCEEDED", decidedById: null } } });
  if (f.refund === "approved") and.push({ toolCalls: { some: { name: "refund_order", status: "SUCCEEDED", decidedById: { not: null } } } });
  if (f.refund === "denied") and.push({ toolCalls: { some: { name: "refund_order", status: "DENIED", decidedById: { not: null } } } });
  return and;
}

/** The runs list's filters, as they appear in the URL (?q=A-1002&outcome=escalated&from=2026-12-01 …). */
export const runFilterSchema = z
  .object({
    /** an order number, a customer's email, a conversation id or a run id */
    q: z.preprocess(emptyToUndefined, z.string().trim().max(200, "The search is too long (200 characters at most).").optional()),
    from: dayField("From"),
    to: dayField("To"),
    outcome: z.preprocess(emptyToUndefined, z.enum(["all", ...RUN_OUTCOMES]).default("all")),
    /** the zone `from` and `to` are read in (the metrics page links with the viewer's); UTC when absent */
    tz: timeZoneField(),
    // The metrics page's drill-downs (lib/console/metrics.ts counts exactly these runs):
    /** runs with an escalation opened for this trigger (customer_request, policy_gap, no_progress, …) */
    reason: z.preprocess(
      emptyToUndefined,
      z
        .string()
        .regex(/^[a-z0-9_]{1,40}$/, "Reason: not a known escalation reason.")
        .optional(),
    ),
    /** runs with an approval in this state (decided: approved, edited or denied by a person) */
    decision: z.preprocess(emptyToUndefined, z.enum(DRILL_DECISIONS).optional()),
    /** …decided by this person (a staff id of the shop) */
    reviewer: z.preprocess(emptyToUndefined, z.string().max(64).optional()),
    /** runs with a refund that ran by itself, ran after a person approved it, or that a person denied */
    refund: z.preprocess(emptyToUndefined, z.enum(DRILL_REFUNDS).optional()),
    /** where the next page starts (from the previous page's answer) */
    cursor: z.preprocess(emptyToUndefined, z.string().max(300).optional()),
  })
  .refine((f) => !f.from || !f.to || f.from <= f.to, { message: "The start date is after the end date.", path: ["to"] });
export type RunFilter = z.output<typeof runFilterSchema>;

/** The filters a supervisor did not type into the form: they come from a metrics link. */
export const DRILL_KEYS = ["tz", "reason", "decision", "reviewer", "refund"] as const;

/** The URL query of a filter (defaults left out), without the cursor unless asked. */
export function runFilterToParams(f: Partial<RunFilter>, withCursor = false): URLSearchParams {
  const p = new URLSearchParams();
  if (f.q) p.set("q", f.q);
  if (f.from) p.set("from", f.from);
  if (f.to) p.set("to", f.to);
  if (f.outcome && f.outcome !== "all") p.set("outcome", f.outcome);
  for (const k of DRILL_KEYS) if (f[k]) p.set(k, f[k]);
  if (withCursor && f.cursor) p.set("cursor", f.cursor);
  return p;
}

function encodeCursor(run: { startedAt: Date; id: string }): string {
  return Buffer.from(JSON.stringify([run.startedAt.toISOString(), run.id])).toString("base64url");
}

function decodeCursor(raw: string): { startedAt: Date; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as [unknown, unknown];
    const startedAt = new Date(String(at));
    if (typeof at === "string" && typeof id === "string" && id && !Number.isNaN(startedAt.getTime())) return { startedAt, id };
  } catch {
    // falls through to the refusal
  }
  throw new AppError("INVALID_INPUT", "This page link is not valid. Start again from the first page.");
}

/**
 * The statement finding runs whose tool calls or handoffs name an order number — through the GIN indexes on
 * ToolCall.input and Handoff.payload (`@>`) — or null when the term cannot be an order number.
 */
export function orderSearchSql(tenantId: string, term: string): Prisma.Sql | null {
  if (/\s/.test(term) || term.length > 40) return null;
  // The model passes the number as the customer typed it; the tools read it upper-cased.
  const forms = [...new Set([term, term.toUpperCase()])];
  const calls = Prisma.join(
    forms.map((f) => Prisma.sql`input @> ${JSON.stringify({ order_number: f })}::jsonb`),
    " OR ",
  );
  const handoffs = Prisma.join(
    forms.map((f) => Prisma.sql`payload @> ${JSON.stringify({ orderNumber: f })}::jsonb`),
    " OR ",
  );
  return Prisma.sql`
    (SELECT "runId" FROM "ToolCall" WHERE "tenantId" = ${tenantId} AND (${calls}))
    UNION
    (SELECT "runId" FROM "Handoff" WHERE "tenantId" = ${tenantId} AND "runId" IS NOT NULL AND (${handoffs}))
    LIMIT ${ORDER_MATCH_LIMIT}`;
}

async function runsNamingOrder(db: PrismaTx, tenantId: string, term: string): Promise<string[]> {
  const sql = orderSearchSql(tenantId, term);
  if (!sql) return [];
  const rows = await db.$queryRaw<Array<{ runId: string }>>(sql);
  return rows.map((r) => r.runId);
}

/** The `where` of a filter (without its cursor): the shop, the date range, the outcome, the search. */
export async function runsWhere(db: PrismaTx, tenantId: string, filter: RunFilter): Promise<Prisma.RunWhereInput> {
  const and: Prisma.RunWhereInput[] = [{ tenantId }];
  const range = dayRange(filter.from, filter.to, filter.tz);
  if (range.gte || range.lt) and.push({ startedAt: range });
  if (filter.outcome !== "all") and.push(runOutcomeWhere(filter.outcome));
  and.push(...drillWhere(filter));
  const q = filter.q?.trim();
  if (q) {
    const branches: Prisma.RunWhereInput[] = [{ id: q }, { conversationId: q }];
    if (q.includes("@")) {
      // Emails are stored lower-cased; an exact match keeps to the (tenantId, email) index.
      const customers = await db.customer.findMany({ where: { tenantId, email: q.toLowerCase() }, select: { id: true } });
      const ids = customers.map((c) => c.id);
      if (ids.length) branches.push({ conversation: { tenantId, OR: [{ customerId: { in: ids } }, { verifiedCustomerId: { in: ids } }] } });
    } else {
      const runIds = await runsNamingOrder(db, tenantId, q);
      if (runIds.length) branches.push({ id: { in: runIds } });
    }
    and.push({ OR: branches });
  }
  return { AND: and };
}

const RUN_ROW_SELECT = {
  id: true,
  conversationId: true,
  phase: true,
  outcome: true,
  lastStopReason: true,
  turnsUsed: true,
  maxTurns: true,
  inputTokens: true,
  outputTokens: true,
  costMicros: true,
  activeMs: true,
  model: true,
  policyVersion: true,
  startedAt: true,
  endedAt: true,
  conversation: { select: { customerId: true, verifiedCustomerId: true } },
  handoffs: {
    orderBy: { createdAt: "asc" },
    select: {
      id: true,
      kind: true,
      status: true,
      payload: true,
      decision: true,
      decidedById: true,
      decidedAt: true,
      toolCallId: true,
      approvals: { orderBy: { createdAt: "asc" }, select: { staffId: true, createdAt: true } },
    },
  },
  toolCalls: { orderBy: [{ messageSeq: "asc" }, { position: "asc" }], select: { id: true, name: true, status: true, input: true } },
} satisfies Prisma.RunSelect;
type RunRowSource = Prisma.RunGetPayload<{ select: typeof RUN_ROW_SELECT }>;

function normaliseOrder(v: unknown): string | null {
  return typeof v === "string" && v.trim() ? v.trim().toUpperCase() : null;
}

/** The rows a supervisor reads: customer, orders, outcome, handoffs and who decided them. */
async function describeRuns(db: PrismaTx, tenantId: string, runs: RunRowSource[]) {
  const customerIds = [
    ...new Set(runs.map((r) => r.conversation.verifiedCustomerId ?? r.conversation.customerId).filter((id) => id !== null)),
  ];
  const [customers, names] = await Promise.all([
    customerIds.length
      ? db.customer.findMany({ where: { tenantId, id: { in: customerIds } }, select: { id: true, name: true, email: true } })
      : [],
    staffNames(db, tenantId),
  ]);
  const customerById = new Map(customers.map((c) => [c.id, c]));
  return runs.map((r) => {
    const orders = new Set<string>();
    for (const c of r.toolCalls) {
      const n = normaliseOrder((c.input as { order_number?: unknown } | null)?.order_number);
      if (n) orders.add(n);
    }
    const handoffs = r.handoffs.map((h) => {
      const approvals = h.approvals.map((a) => ({ name: names.get(a.staffId) ?? null, at: a.createdAt }));
      const decidedBy = h.decidedById ? { name: names.get(h.decidedById) ?? null } : null;
      const orderNumber = normaliseOrder(parseHandoffPayload(h.payload).orderNumber);
      if (orderNumber) orders.add(orderNumber);
      const people = [...approvals.map((a) => a.name), ...(h.status === "PENDING" ? [] : [decidedBy?.name ?? null])].filter(
        (n): n is string => !!n,
      );
      return {
        id: h.id,
        kind: h.kind,
        status: h.status,
        summary:
          h.status === "PENDING"
            ? approvals.length
              ? `${approvals.length} approval so far`
              : "pending"
            : decidedSummary({
                status: h.status,
                approvals,
                decidedBy,
                decision: h.decision,
                call: callAmong(r.toolCalls, h.toolCallId),
              }),
        decidedBy: [...new Set(people)],
        decidedAt: h.decidedAt,
      };
    });
    const customerId = r.conversation.verifiedCustomerId ?? r.conversation.customerId;
    const customer = customerId ? (customerById.get(customerId) ?? null) : null;
    const outcome = runOutcome({ phase: r.phase, outcome: r.outcome, handoffs: r.handoffs, toolCalls: r.toolCalls });
    return {
      id: r.id,
      conversationId: r.conversationId,
      startedAt: r.startedAt,
      endedAt: r.endedAt,
      phase: r.phase,
      outcome,
      outcomeLabel: RUN_OUTCOME_LABEL[outcome],
      /** Run.outcome: why it ended, as the runtime wrote it */
      endedBecause: r.outcome,
      stopReason: r.lastStopReason,
      customer: customer ? { name: customer.name, email: customer.email } : null,
      verified: r.conversation.verifiedCustomerId !== null,
      orders: [...orders],
      handoffs,
      decidedBy: [...new Set(handoffs.flatMap((h) => h.decidedBy))],
      costMicros: r.costMicros,
      inputTokens: r.inputTokens,
      outputTokens: r.outputTokens,
      turnsUsed: r.turnsUsed,
      maxTurns: r.maxTurns,
      activeMs: r.activeMs,
      model: r.model,
      policyVersion: r.policyVersion,
    };
  });
}
type RunRowFull = Awaited<ReturnType<typeof describeRuns>>[number];

async function runPage(db: PrismaTx, where: Prisma.RunWhereInput, cursor: { startedAt: Date; id: string } | null, limit: number) {
  return db.run.findMany({
    where: cursor
      ? { AND: [where, { OR: [{ startedAt: { lt: cursor.startedAt } }, { startedAt: cursor.startedAt, id: { lt: cursor.id } }] }] }
      : where,
    orderBy: [{ startedAt: "desc" }, { id: "desc" }],
    take: limit + 1,
    select: RUN_ROW_SELECT,
  });
}

/** One page of the shop's runs matching the filter, newest first, and where the next page starts (null: none). */
export async function searchRuns(db: PrismaTx, viewer: Viewer, filter: RunFilter, opts: { limit?: number; count?: boolean } = {}) {
  assertSupervisor(viewer);
  const limit = Math.max(1, Math.min(opts.limit ?? RUNS_PAGE, 500));
  const cursor = filter.cursor ? decodeCursor(filter.cursor) : null;
  const where = await runsWhere(db, viewer.tenantId, filter);
  const [rows, total, reviewer] = await Promise.all([
    runPage(db, where, cursor, limit),
    // How many runs match in all (the metrics page links here with a number: the list says the same one).
    opts.count ? db.run.count({ where }) : null,
    filter.reviewer ? db.staffUser.findFirst({ where: { id: filter.reviewer, tenantId: viewer.tenantId }, select: { name: true } }) : null,
  ]);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return jsonify({
    runs: await describeRuns(db, viewer.tenantId, page),
    nextCursor: rows.length > limit && last ? encodeCursor(last) : null,
    total,
    reviewerName: reviewer?.name ?? null,
  });
}
export type RunSearchPage = Awaited<ReturnType<typeof searchRuns>>;
export type RunRow = RunSearchPage["runs"][number];

/**
 * Every run matching the filter (its cursor ignored: an export starts at the newest), page by page, for a
 * streamed export. The role and the filter are checked before the first row.
 */
export async function exportRuns(db: PrismaTx, viewer: Viewer, filter: RunFilter): Promise<AsyncGenerator<RunRowFull>> {
  assertSupervisor(viewer);
  const where = await runsWhere(db, viewer.tenantId, filter);
  async function* rows() {
    let cursor: { startedAt: Date; id: string } | null = null;
    for (;;) {
      const batch = await runPage(db, where, cursor, EXPORT_PAGE);
      const page = batch.slice(0, EXPORT_PAGE);
      yield* await describeRuns(db, viewer.tenantId, page);
      const last = page[page.length - 1];
      if (batch.length <= EXPORT_PAGE || !last) return;
      cursor = last;
    }
  }
  return rows();
}

export const RUN_CSV_COLUMNS = [
  "run_id",
  "started_at",
  "ended_at",
  "outcome",
  "phase",
  "stop_reason",
  "ended_because",
  "customer_name",
  "customer_email",
  "orders",
  "handoffs",
  "decided_by",
  "cost_usd",
  "input_tokens",
  "output_tokens",
  "turns",
  "conversation_id",
] as const;

const usd = (micros: number) => Number((micros / 1_000_000).toFixed(6));

export function runCsvHeader(): string {
  return csvRow(RUN_CSV_COLUMNS);
}

/** One run as a CSV line (dates in ISO 8601 UTC; lists joined with "; "). */
export function runCsvRow(r: RunRowFull): string {
  return csvRow([
    r.id,
    r.startedAt.toISOString(),
    r.endedAt?.toISOString() ?? "",
    r.outcome,
    r.phase,
    r.stopReason,
    r.endedBecause,
    r.customer?.name,
    r.customer?.email,
    r.orders.join("; "),
    r.handoffs.map((h) => `${h.kind.toLowerCase()}: ${h.summary}`).join("; "),
    r.decidedBy.join("; "),
    usd(r.costMicros),
    r.inputTokens,
    r.outputTokens,
    r.turnsUsed,
    r.conversationId,
  ]);
}

/** One run as a line of JSON (JSON Lines). */
export function runJsonLine(r: RunRowFull): string {
  return `${JSON.stringify({
    run_id: r.id,
    started_at: r.startedAt.toISOString(),
    ended_at: r.endedAt?.toISOString() ?? null,
    outcome: r.outcome,
    phase: r.phase,
    stop_reason: r.stopReason,
    ended_because: r.endedBecause,
    customer: r.customer,
    customer_verified: r.verified,
    orders: r.orders,
    handoffs: r.handoffs.map((h) => ({
      id: h.id,
      kind: h.kind,
      status: h.status,
      summary: h.summary,
      decided_by: h.decidedBy,
      decided_at: h.decidedAt?.toISOString() ?? null,
    })),
    decided_by: r.decidedBy,
    cost_usd: usd(r.costMicros),
    input_tokens: r.inputTokens,
    output_tokens: r.outputTokens,
    turns: r.turnsUsed,
    model: r.model,
    policy_version: r.policyVersion,
    conversation_id: r.conversationId,
  })}\n`;
}

/**
 * A run as the model saw it (lib/runs/detail) with what a supervisor reads first: its row (customer,
 * orders, outcome), the final reply as the customer saw it, and each handoff's decision with the people who
 * made it. Another shop's id → NOT_FOUND; a reviewer → FORBIDDEN.
 */
export async function runReview(db: PrismaTx, viewer: Viewer, runId: string) {
  assertSupervisor(viewer);
  const row = await db.run.findFirst({ where: { id: runId, tenantId: viewer.tenantId }, select: RUN_ROW_SELECT });
  if (!row) throw new AppError("NOT_FOUND", "This run was not found.");
  const [detail, [summary], handoffs, names, lastShown, lastAgent] = await Promise.all([
    runDetail(db, runId, viewer.tenantId),
    describeRuns(db, viewer.tenantId, [row]),
    db.handoff.findMany({
      where: { runId, tenantId: viewer.tenantId },
      include: { approvals: { orderBy: { createdAt: "asc" } } },
      orderBy: { createdAt: "asc" },
    }),
    staffNames(db, viewer.tenantId),
    // What the customer last saw from this run: the agent's reply, a notice, or a person's reply.
    db.message.findFirst({
      where: { conversationId: row.conversationId, tenantId: viewer.tenantId, runId, shownToCustomer: true, author: { not: "CUSTOMER" } },
      orderBy: { seq: "desc" },
      select: { seq: true, author: true, staffId: true, displayText: true, createdAt: true },
    }),
    db.message.findFirst({
      where: { conversationId: row.conversationId, tenantId: viewer.tenantId, runId, author: "AGENT" },
      orderBy: { seq: "desc" },
      select: { seq: true, shownToCustomer: true, content: true, createdAt: true },
    }),
  ]);
  const decisions = handoffs.map((h) => {
    const call = callAmong(detail.toolCalls, h.toolCallId);
    const presented = consoleHandoff({ ...h, call }, names);
    const facts: DecisionFacts = {
      kind: h.kind,
      status: h.status,
      toolName: presented.toolName,
      proposedInput: presented.proposedInput,
      editedInput: presented.editedInput,
      requiredApprovals: h.requiredApprovals,
      approvals: presented.approvals.map((a) => ({ name: a.name, at: a.at })),
      decidedBy: presented.decidedBy,
      decidedAt: h.decidedAt,
      decisionReason: h.decisionReason,
      decision: h.decision,
      call: call ? { status: call.status, result: call.result } : null,
    };
    return { handoff: presented, facts };
  });
  // A reply held back because a person owned the conversation is shown as such, never as what the customer saw.
  const heldBack =
    lastAgent && !lastAgent.shownToCustomer
      ? (lastAgent.content as Array<{ type: string; text?: string }>)
          .filter((b) => b.type === "text")
          .map((b) => b.text ?? "")
          .join("\n")
      : null;
  return jsonify({
    ...detail,
    summary,
    finalReply: lastShown
      ? {
          from: lastShown.author === "AGENT" ? "agent" : lastShown.author === "STAFF" ? "person" : "system",
          name: lastShown.author === "STAFF" && lastShown.staffId ? (names.get(lastShown.staffId) ?? null) : null,
          text: lastShown.displayText ?? "",
          at: lastShown.createdAt,
          seq: lastShown.seq,
        }
      : null,
    heldBackReply: heldBack && (!lastShown || lastAgent!.seq > lastShown.seq) ? heldBack : null,
    decisions,
  });
}
export type RunReview = Awaited<ReturnType<typeof runReview>>;
