// The what-if before publishing: the shop's recent gated calls judged again by the policy gates under a draft, and
// compared with the decision each call got. Only the policy is judged again: what the other gates said (the
// customer not verified, a repeated call…) is taken as recorded, because it depended on the conversation at the
// time, not on the policy. One query reads the calls; the rest is computed in memory.
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { evaluateGates, POLICY_GATES } from "@/lib/gates/evaluate";
import type { Gate, GateDecisionKind } from "@/lib/gates/types";
import type { PolicyRules } from "@/lib/policy/policy";
import { canonicalJson } from "@/lib/runtime/idempotency";
import { getTool } from "@/lib/tools/registry";
import type { CallFacts } from "@/lib/tools/types";
import { requireAdmin, type SettingsActor } from "./admin";
import { validateDraft } from "./policy";

export const WHAT_IF_DEFAULT_DAYS = 28;
export const WHAT_IF_MAX_DAYS = 90;
/** The newest calls replayed at most (a shop busier than this sees the newest ones, and is told so). */
export const WHAT_IF_MAX_CALLS = 20_000;
export const WHAT_IF_PAGE_SIZE = 25;

/** Where a call lands: it runs by itself, a person approves it, it is refused, or it waits to be judged again. */
export type Outcome = "automatic" | "approval" | "refused" | "deferred";
export const OUTCOMES: readonly Outcome[] = ["automatic", "approval", "refused", "deferred"];

export interface Verdict {
  outcome: Outcome;
  /** people who must approve (approval only; 0 otherwise) */
  approvers: number;
}

/** A gated call as recorded: what the gates judged it on and what it got. */
export interface RecordedCall {
  id: string;
  runId: string;
  toolName: string;
  input: Record<string, unknown>;
  facts: CallFacts;
  /** the decision it got (every gate combined) */
  decision: GateDecisionKind;
  /** approvers its approval needed (when it parked) */
  requiredApprovals: number | null;
  /** the latest round of gate decisions on it (the gates of the policy and the others) */
  records: Array<{ gate: string; decision: GateDecisionKind; reason: string }>;
  policyVersion: number;
  createdAt: Date;
}

export interface ReplayedCall {
  toolCallId: string;
  runId: string;
  toolName: string;
  summary: string;
  amountCents: number | null;
  createdAt: Date;
  policyVersion: number;
  was: Verdict;
  now: Verdict;
  /** why, under the draft (the deciding gate's reason) */
  reason: string;
}

export interface Tally {
  count: number;
  amountCents: number;
}

export interface WhatIfReport {
  days: number;
  since: Date;
  /** calls replayed */
  total: number;
  /** calls left out: recorded before the money rules judged totals, their facts lack what the rules now need */
  skipped: number;
  /** more calls than WHAT_IF_MAX_CALLS in the window: only the newest were replayed */
  truncated: boolean;
  before: Record<Outcome, Tally>;
  after: Record<Outcome, Tally>;
  /** of the calls that need approval, how many need two people */
  twoApprovers: { before: Tally; after: Tally };
  /** how calls moved, most frequent first ("approval" → "automatic" …); `twoApprovers` distinguishes 1 and 2 people */
  transitions: Array<{ from: Verdict; to: Verdict; count: number; amountCents: number }>;
  byTool: Array<{ toolName: string; before: Record<Outcome, number>; after: Record<Outcome, number>; changed: number }>;
  /** the calls whose verdict changes, newest first, one page */
  changed: { total: number; page: number; pageSize: number; pages: number; calls: ReplayedCall[] };
}

const OUTCOME_OF: Record<GateDecisionKind, Outcome> = { allow: "automatic", ask: "approval", deny: "refused", defer: "deferred" };
const POLICY_GATE_NAMES = new Set(POLICY_GATES.map((g) => g.name));

function verdictOf(decision: GateDecisionKind, approvers: number | null | undefined): Verdict {
  const outcome = OUTCOME_OF[decision];
  return { outcome, approvers: outcome === "approval" ? Math.max(1, approvers ?? 1) : 0 };
}

const sameVerdict = (a: Verdict, b: Verdict) => a.outcome === b.outcome && a.approvers === b.approvers;

/** Money rules judge totals: a refund or replacement recorded without them cannot be judged again fairly. */
const MONEY_TOOLS = new Set(["refund_order", "create_replacement"]);
function replayable(call: RecordedCall): boolean {
  return !MONEY_TOOLS.has(call.toolName) || Boolean(call.facts?.totals);
}

/**
 * Judges one recorded call again under `rules`: the policy gates run afresh on the stored input and facts, the
 * other gates' recorded decisions stand, and precedence combines them exactly as at run time.
 */
export function replayCall(call: RecordedCall, rules: PolicyRules): { verdict: Verdict; reason: string } {
  const tool = getTool(call.toolName);
  // What the non-policy gates said then, as gates that say it again.
  const recorded: Gate[] = call.records
    .filter((r) => !POLICY_GATE_NAMES.has(r.gate) && r.gate !== "default")
    .map((r, i) => ({ name: `${r.gate}#${i}`, check: () => ({ decision: r.decision, reason: r.reason }) }));
  const evaluation = evaluateGates(
    {
      toolName: call.toolName,
      input: call.input,
      canonicalInput: canonicalJson(call.input),
      facts: call.facts,
      isKnownTool: !!tool,
      accountAction: tool?.accountAction ?? true,
      sideEffect: tool?.sideEffect ?? true,
      // Only read by the gates that are not replayed.
      state: { verifiedCustomerId: null, verificationExpiresAt: null, verificationLevel: null, now: call.createdAt, previousCall: null },
      policy: { version: 0, rules },
    },
    [...recorded, ...POLICY_GATES],
  );
  return {
    verdict: verdictOf(evaluation.verdict.decision, evaluation.verdict.requiredApprovals),
    reason: evaluation.verdict.reason,
  };
}

const emptyTallies = (): Record<Outcome, Tally> => ({
  automatic: { count: 0, amountCents: 0 },
  approval: { count: 0, amountCents: 0 },
  refused: { count: 0, amountCents: 0 },
  deferred: { count: 0, amountCents: 0 },
});
const emptyCounts = (): Record<Outcome, number> => ({ automatic: 0, approval: 0, refused: 0, deferred: 0 });

/** The what-if over a set of recorded calls (newest first): tallies before and after, moves, the changed calls. */
export function compareWithDraft(
  calls: readonly RecordedCall[],
  rules: PolicyRules,
  opts: { page?: number; pageSize?: number } = {},
): Omit<WhatIfReport, "days" | "since" | "truncated"> {
  const before = emptyTallies();
  const after = emptyTallies();
  const twoApprovers = { before: { count: 0, amountCents: 0 }, after: { count: 0, amountCents: 0 } };
  const transitions = new Map<string, { from: Verdict; to: Verdict; count: number; amountCents: number }>();
  const byTool = new Map<string, { toolName: string; before: Record<Outcome, number>; after: Record<Outcome, number>; changed: number }>();
  const changed: ReplayedCall[] = [];
  let skipped = 0;
  for (const call of calls) {
    if (!replayable(call)) {
      skipped++;
      continue;
    }
    const amount = typeof call.facts?.amountCents === "number" ? call.facts.amountCents : 0;
    const was = verdictOf(call.decision, call.requiredApprovals);
    const { verdict: now, reason } = replayCall(call, rules);
    before[was.outcome].count++;
    before[was.outcome].amountCents += amount;
    after[now.outcome].count++;
    after[now.outcome].amountCents += amount;
    if (was.approvers >= 2) {
      twoApprovers.before.count++;
      twoApprovers.before.amountCents += amount;
    }
    if (now.approvers >= 2) {
      twoApprovers.after.count++;
      twoApprovers.after.amountCents += amount;
    }
    let tool = byTool.get(call.toolName);
    if (!tool) byTool.set(call.toolName, (tool = { toolName: call.toolName, before: emptyCounts(), after: emptyCounts(), changed: 0 }));
    tool.before[was.outcome]++;
    tool.after[now.outcome]++;
    if (sameVerdict(was, now)) continue;
    tool.changed++;
    const key = `${was.outcome}:${was.approvers}>${now.outcome}:${now.approvers}`;
    const t = transitions.get(key) ?? { from: was, to: now, count: 0, amountCents: 0 };
    t.count++;
    t.amountCents += amount;
    transitions.set(key, t);
    changed.push({
      toolCallId: call.id,
      runId: call.runId,
      toolName: call.toolName,
      summary: call.facts?.summary ?? call.toolName,
      amountCents: typeof call.facts?.amountCents === "number" ? call.facts.amountCents : null,
      createdAt: call.createdAt,
      policyVersion: call.policyVersion,
      was,
      now,
      reason,
    });
  }
  const pageSize = Math.min(Math.max(1, opts.pageSize ?? WHAT_IF_PAGE_SIZE), 200);
  const pages = Math.max(1, Math.ceil(changed.length / pageSize));
  const page = Math.min(Math.max(1, opts.page ?? 1), pages);
  return {
    total: calls.length - skipped,
    skipped,
    before,
    after,
    twoApprovers,
    transitions: [...transitions.values()].sort((a, b) => b.count - a.count || b.amountCents - a.amountCents),
    byTool: [...byTool.values()].sort((a, b) => a.toolName.localeCompare(b.toolName)),
    changed: { total: changed.length, page, pageSize, pages, calls: changed.slice((page - 1) * pageSize, page * pageSize) },
  };
}

interface CallRow {
  id: string;
  runId: string;
  name: string;
  input: unknown;
  gateFacts: unknown;
  gateDecision: GateDecisionKind;
  createdAt: Date;
  policyVersion: number;
  requiredApprovals: number | null;
  records: Array<{ gate: string; decision: GateDecisionKind; reason: string }> | null;
}

/**
 * The shop's gated calls of the last `days` days, newest first (at most `limit`), each with the latest round of
 * gate decisions the policy made on it (a deferred call is judged again later; a reviewer's edit is re-gated under
 * their name and is not the policy's decision). One query; scoped by the tenant.
 */
export async function recordedCalls(client: object, tenantId: string, since: Date, limit = WHAT_IF_MAX_CALLS + 1): Promise<RecordedCall[]> {
  const { rows } = await sql<CallRow>`
    SELECT tc.id, tc."runId", tc.name, tc.input, tc."gateFacts", tc."gateDecision", tc."createdAt", r."policyVersion",
           h."requiredApprovals", latest.records
    FROM "ToolCall" tc
    JOIN "Run" r ON r.id = tc."runId"
    LEFT JOIN "Handoff" h ON h."toolCallId" = tc.id
    LEFT JOIN LATERAL (
      SELECT json_agg(json_build_object('gate', g.gate, 'decision', g.decision, 'reason', g.reason)) AS records
      FROM "GateDecision" g
      WHERE g."runId" = tc."runId" AND g."toolCallId" = tc.id AND g.actor = 'policy'
        AND g."createdAt" = (SELECT max(g2."createdAt") FROM "GateDecision" g2
                             WHERE g2."runId" = tc."runId" AND g2."toolCallId" = tc.id AND g2.actor = 'policy')
    ) latest ON true
    WHERE tc."tenantId" = ${tenantId} AND tc."createdAt" >= ${since} AND tc."gateFacts" IS NOT NULL
    ORDER BY tc."createdAt" DESC, tc.id DESC
    LIMIT ${limit}`.execute(storeOf(client));
  return rows.map((r) => ({
    id: r.id,
    runId: r.runId,
    toolName: r.name,
    input: (r.input && typeof r.input === "object" ? r.input : {}) as Record<string, unknown>,
    facts: r.gateFacts as CallFacts,
    decision: r.gateDecision,
    requiredApprovals: r.requiredApprovals,
    records: r.records ?? [],
    policyVersion: r.policyVersion,
    createdAt: r.createdAt,
  }));
}

/**
 * The what-if of a draft policy over the shop's last `days` days (default 28, at most 90): admins only; an invalid
 * draft is refused like a publish would be (INVALID_INPUT with the fields' problems).
 */
export async function whatIf(
  client: object,
  actor: SettingsActor,
  input: { rules: unknown; days?: number; page?: number; now?: Date },
): Promise<WhatIfReport> {
  const db = storeOf(client);
  await requireAdmin(db, actor);
  const days = input.days ?? WHAT_IF_DEFAULT_DAYS;
  if (!Number.isInteger(days) || days < 1 || days > WHAT_IF_MAX_DAYS)
    throw new AppError("INVALID_INPUT", `Look back between 1 and ${WHAT_IF_MAX_DAYS} days.`);
  const rules = validateDraft(input.rules);
  const since = new Date((input.now ?? new Date()).getTime() - days * 24 * 60 * 60 * 1000);
  const { calls, truncated } = await callsToJudge(client, actor.tenantId, since);
  const report = compareWithDraft(await withDraftWindows(client, actor.tenantId, calls, rules), rules, { page: input.page });
  return { days, since, truncated, ...report };
}

/**
 * A money call's per-customer total was counted over the window of the policy it was judged under: a draft with
 * another window is judged on the total the gates would count under it — the customer's automatic calls of that
 * tool over the draft's window before the call, counted again (one query for every call whose window differs).
 */
export async function withDraftWindows(
  client: object,
  tenantId: string,
  calls: RecordedCall[],
  rules: PolicyRules,
): Promise<RecordedCall[]> {
  const windowOf = (tool: string) =>
    tool === "refund_order"
      ? rules.refund.autoPerCustomerWindowDays
      : tool === "create_replacement"
        ? rules.replacement.autoPerCustomerWindowDays
        : null;
  const recount = calls.filter((c) => {
    const days = windowOf(c.toolName);
    return days !== null && c.facts?.totals && c.facts.customerId && c.facts.totals.windowDays !== days;
  });
  if (!recount.length) return calls;
  const asked = recount.map((c) => ({
    id: c.id,
    name: c.toolName,
    customer: c.facts.customerId,
    at: c.createdAt.toISOString(),
    days: windowOf(c.toolName),
  }));
  // Worth as the gates count it (lib/tools/order-helpers `moneyFacts`): a refund its amount, a replacement its value.
  const { rows } = await sql<{ id: string; cents: number }>`
    SELECT t.id, (SELECT coalesce(sum(CASE WHEN c.name = 'refund_order' THEN (coalesce(c."effectiveInput", c.input)->>'amount_cents')::int
                                            ELSE (c."gateFacts"->>'amountCents')::int END), 0)::int
                  FROM "ToolCall" c
                  WHERE c."tenantId" = ${tenantId} AND c.name = t.name AND c.id <> t.id AND c.status = 'SUCCEEDED'
                    AND c."decidedById" IS NULL AND c."gateFacts"->>'customerId' = t.customer
                    AND c."createdAt" < t.at AND c."createdAt" > t.at - make_interval(days => t.days)) AS cents
    FROM jsonb_to_recordset(${JSON.stringify(asked)}::jsonb) AS t(id text, name text, customer text, at timestamp, days int)`.execute(
    storeOf(client),
  );
  const counted = new Map(rows.map((r) => [r.id, r.cents]));
  return calls.map((c) => {
    const cents = counted.get(c.id);
    if (cents === undefined || !c.facts.totals) return c;
    const totals = { ...c.facts.totals, customerAutoCents: cents, windowDays: windowOf(c.toolName)! };
    return { ...c, facts: { ...c.facts, totals } };
  });
}

/** The calls a what-if judges: the newest WHAT_IF_MAX_CALLS since `since` (`truncated`: there were more). */
export async function callsToJudge(client: object, tenantId: string, since: Date): Promise<{ calls: RecordedCall[]; truncated: boolean }> {
  const calls = await recordedCalls(client, tenantId, since);
  const truncated = calls.length > WHAT_IF_MAX_CALLS;
  return { calls: truncated ? calls.slice(0, WHAT_IF_MAX_CALLS) : calls, truncated };
}
