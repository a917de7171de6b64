import "server-only";
import type { Prisma, PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { eventsSince } from "@/lib/events";
import { customerView } from "@/lib/conversations/view";
import { runDetail } from "@/lib/operator/commands";
import { presentHandoff } from "@/lib/operator/present";
import type { QueueFilter } from "./filters";
import { jsonify, type Jsonify } from "./json";
import { SLA_AMBER_MS, SLA_RED_MS } from "./sla";

// The console's data access. Every function takes the caller's tenant and puts it in the `where`, so an id
// from another shop is simply "not found" — never a different error, never a leak. Components never query
// the database themselves; pages and route handlers call these. Results are JSON-shaped (see ./json).

type Actor = { tenantId: string; staffId: string };

async function staffNames(db: PrismaTx, tenantId: string) {
  const staff = await db.staffUser.findMany({ where: { tenantId }, select: { id: true, name: true } });
  return new Map(staff.map((s) => [s.id, s.name]));
}

function queueWhere(actor: Actor, filter: QueueFilter, now: Date): Prisma.HandoffWhereInput {
  const and: Prisma.HandoffWhereInput[] = [{ tenantId: actor.tenantId }];
  if (filter.status === "pending") and.push({ status: "PENDING" });
  if (filter.status === "decided") and.push({ status: { not: "PENDING" } });
  if (filter.kind !== "all") and.push({ kind: filter.kind === "approval" ? "APPROVAL" : "ESCALATION" });
  if (filter.min !== undefined) and.push({ amountCents: { gte: Math.round(filter.min * 100) } });
  if (filter.max !== undefined) and.push({ amountCents: { lte: Math.round(filter.max * 100) } });
  const ago = (ms: number) => new Date(now.getTime() - ms);
  if (filter.age === "fresh") and.push({ createdAt: { gt: ago(SLA_AMBER_MS) } });
  if (filter.age === "aging") and.push({ createdAt: { lte: ago(SLA_AMBER_MS), gt: ago(SLA_RED_MS) } });
  if (filter.age === "overdue") and.push({ createdAt: { lte: ago(SLA_RED_MS) } });
  // A claim counts only while it is live; an expired one is the same as none.
  if (filter.claimed === "me") and.push({ claimedById: actor.staffId, claimExpiresAt: { gt: now } });
  if (filter.claimed === "others") and.push({ claimedById: { not: null }, claimExpiresAt: { gt: now } }, { NOT: { claimedById: actor.staffId } });
  if (filter.claimed === "nobody") and.push({ OR: [{ claimedById: null }, { claimExpiresAt: null }, { claimExpiresAt: { lte: now } }] });
  return { AND: and };
}

export const QUEUE_LIMIT = 200;

/** The reviewer queue: handoffs of the caller's shop matching the filter, oldest open item first. */
export async function queueHandoffs(db: PrismaTx, actor: Actor, filter: QueueFilter, now = new Date()) {
  const rows = await db.handoff.findMany({
    where: queueWhere(actor, filter, now),
    include: { approvals: { orderBy: { createdAt: "asc" } } },
    orderBy: filter.status === "pending" ? [{ createdAt: "asc" }, { id: "asc" }] : [{ updatedAt: "desc" }, { id: "asc" }],
    take: QUEUE_LIMIT,
  });
  const names = await staffNames(db, actor.tenantId);
  return jsonify(rows.map((h) => presentHandoff(h, names)));
}
export type QueueItem = Awaited<ReturnType<typeof queueHandoffs>>[number];

/**
 * One handoff with what a reviewer needs around it: the run's phase, the pending call's state and result
 * (so the outcome of a decision is what the server recorded), and who holds the conversation.
 */
export async function handoffDetail(db: PrismaTx, tenantId: string, handoffId: string) {
  const h = await db.handoff.findFirst({ where: { id: handoffId, tenantId }, include: { approvals: { orderBy: { createdAt: "asc" } } } });
  if (!h) throw new AppError("NOT_FOUND", "This handoff was not found.");
  const [names, run, call, conversation] = await Promise.all([
    staffNames(db, tenantId),
    h.runId ? db.run.findFirst({ where: { id: h.runId, tenantId }, select: { id: true, phase: true, outcome: true, lastStopReason: true } }) : null,
    h.toolCallId ? db.toolCall.findFirst({ where: { id: h.toolCallId, tenantId }, select: { status: true, isError: true, result: true, effectiveInput: true, idempotencyKey: true } }) : null,
    db.conversation.findFirstOrThrow({ where: { id: h.conversationId, tenantId }, select: { id: true, status: true, ownerStaffId: true } }),
  ]);
  return jsonify({
    handoff: presentHandoff(h, names),
    run,
    toolCall: call,
    conversation: { ...conversation, ownerName: conversation.ownerStaffId ? names.get(conversation.ownerStaffId) ?? null : null },
  });
}
export type HandoffDetail = Awaited<ReturnType<typeof handoffDetail>>;
export type ConsoleHandoff = HandoffDetail["handoff"];

/** A conversation as the customer sees it, with its owner and handoffs, for the take-over page. */
export async function conversationDetail(db: PrismaTx, tenantId: string, conversationId: string) {
  const conv = await db.conversation.findFirst({ where: { id: conversationId, tenantId } });
  if (!conv) throw new AppError("NOT_FOUND", "This conversation was not found.");
  const [view, customer, handoffs, names] = await Promise.all([
    customerView(db, conv.id),
    conv.customerId ? db.customer.findFirst({ where: { id: conv.customerId, tenantId }, select: { name: true, email: true } }) : null,
    db.handoff.findMany({ where: { conversationId: conv.id, tenantId }, include: { approvals: true }, orderBy: { createdAt: "desc" }, take: 20 }),
    staffNames(db, tenantId),
  ]);
  return jsonify({
    conversation: { id: conv.id, status: conv.status, ownerStaffId: conv.ownerStaffId, ownerName: view.owner, customer, createdAt: conv.createdAt },
    view,
    handoffs: handoffs.map((h) => presentHandoff(h, names)),
  });
}
export type ConversationDetail = Awaited<ReturnType<typeof conversationDetail>>;

export const RUN_PHASES = ["RUNNING", "WAITING_FOR_APPROVAL", "WAITING_FOR_RETRY", "COMPLETED", "ESCALATED", "DEAD_LETTER"] as const;

/** Recent runs of the shop, newest first, optionally by phase. */
export async function listRuns(db: PrismaTx, tenantId: string, filter: { phase?: (typeof RUN_PHASES)[number]; limit?: number } = {}) {
  const runs = await db.run.findMany({
    where: { tenantId, ...(filter.phase ? { phase: filter.phase } : {}) },
    orderBy: [{ startedAt: "desc" }, { id: "asc" }],
    take: Math.min(filter.limit ?? 100, 500),
    select: {
      id: true, conversationId: true, phase: true, turnsUsed: true, maxTurns: true, inputTokens: true, outputTokens: true,
      costMicros: true, activeMs: true, model: true, lastStopReason: true, outcome: true, policyVersion: true, startedAt: true, endedAt: true,
    },
  });
  return jsonify(runs);
}
export type RunSummary = Awaited<ReturnType<typeof listRuns>>[number];

/** A run as the model saw it (lib/operator runDetail), scoped to the shop. */
export async function runInspection(db: PrismaTx, tenantId: string, runId: string) {
  return jsonify(await runDetail(db, runId, tenantId));
}
export type RunInspection = Awaited<ReturnType<typeof runInspection>>;

/**
 * Where a live view starts following the feed: it reads this, then loads its data. Same visibility rule as
 * eventsSince (only events below the oldest transaction still in flight), so an event that commits late
 * with a lower id is still delivered; at worst the view refetches once for something it already shows.
 */
export async function eventHead(db: PrismaTx, tenantId: string): Promise<string> {
  const rows = await db.$queryRaw<Array<{ head: bigint | null }>>`
    SELECT max(id) AS head FROM "Event" WHERE "tenantId" = ${tenantId} AND txid < pg_snapshot_xmin(pg_current_snapshot())`;
  return (rows[0]?.head ?? BigInt(0)).toString();
}

export const EVENTS_PAGE = 200;

/**
 * Events after a cursor (exclusive), oldest first, for the shop (and one conversation, if given). The
 * answer carries the cursor to ask from next; `more` says a full page came back and the client should ask
 * again at once rather than wait.
 */
export async function consoleEvents(db: PrismaTx, tenantId: string, cursor: bigint, conversationId?: string) {
  const rows = await eventsSince(db, { tenantId, ...(conversationId ? { conversationId } : {}) }, cursor, EVENTS_PAGE);
  const last = rows[rows.length - 1];
  return jsonify({
    cursor: (last?.id ?? cursor).toString(),
    more: rows.length === EVENTS_PAGE,
    events: rows.map((e) => ({ id: e.id, type: e.type, conversationId: e.conversationId, data: e.data, at: e.createdAt })),
  });
}
export type ConsoleEvents = Awaited<ReturnType<typeof consoleEvents>>;
export type ConsoleEvent = ConsoleEvents["events"][number];
export type { Jsonify };
