import "server-only";
import type { Prisma, PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { storeOf } from "@/lib/db/kysely";
import { eventsSince } from "@/lib/events";
import { feedHead } from "@/lib/store/events";
import { currentDraft, listenerGeneration, queueAnnouncedUpTo, waitForFeed } from "@/lib/live/hub";
import { type FeedTopic, topicFilter } from "@/lib/live/feed-topics";
import { customerView } from "@/lib/conversations/view";
import { withCalls } from "@/lib/handoffs/calls";
import { presentHandoff } from "@/lib/handoffs/present";
import { staffNames } from "@/lib/staff-names";
import { parseHandoffPayload } from "@/lib/handoffs/record";
import { agentsOwnAccount, describeToolCalls } from "./agent-tried";
import type { QueueFilter } from "./filters";
import { jsonify, type Jsonify } from "./json";
import { orderFacts } from "./order-facts";
import { SLA_AMBER_MS, SLA_RED_MS } from "./sla";

// The console's data access. Every function takes the caller's tenant and puts it in the `where`, so an id
// from another shop is simply "not found" — never a different error, never a leak. Components never query
// the database themselves; pages and route handlers call these. Results are JSON-shaped (see ./json).

type Actor = { tenantId: string; staffId: string };

type HandoffWithApprovals = Omit<Parameters<typeof presentHandoff>[0], "approvals"> & {
  approvals: Array<{ staffId: string; createdAt: Date }>;
};

/** A handoff as the console shows it: the presented record, with every approver named and timed. */
export function consoleHandoff(h: HandoffWithApprovals, names: Map<string, string>) {
  return {
    ...presentHandoff(h, names),
    approvals: h.approvals.map((a) => ({ staffId: a.staffId, name: names.get(a.staffId) ?? null, at: a.createdAt })),
  };
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
  if (filter.claimed === "others")
    and.push({ claimedById: { not: null }, claimExpiresAt: { gt: now } }, { NOT: { claimedById: actor.staffId } });
  if (filter.claimed === "nobody") and.push({ OR: [{ claimedById: null }, { claimExpiresAt: null }, { claimExpiresAt: { lte: now } }] });
  return { AND: and };
}

export const QUEUE_LIMIT = 200;

/** The reviewer queue: handoffs of the caller's shop matching the filter, oldest open item first. */
export async function queueHandoffs(db: PrismaTx, actor: Actor, filter: QueueFilter, now = new Date()) {
  // The staff names are read while the page is (they do not depend on it).
  const [rows, names] = await Promise.all([
    db.handoff.findMany({
      where: queueWhere(actor, filter, now),
      include: { approvals: { orderBy: { createdAt: "asc" } } },
      orderBy: filter.status === "pending" ? [{ createdAt: "asc" }, { id: "asc" }] : [{ updatedAt: "desc" }, { id: "asc" }],
      take: QUEUE_LIMIT,
    }),
    staffNames(db, actor.tenantId),
  ]);
  // What became of a decided item's call (a card says when an approved call was not done); an open one's waits.
  const decided = await withCalls(
    db,
    rows.filter((h) => h.status !== "PENDING"),
  );
  const callOf = new Map(decided.map((h) => [h.id, h.call]));
  return jsonify(rows.map((h) => consoleHandoff({ ...h, call: callOf.get(h.id) ?? null }, names)));
}
export type QueueItem = Awaited<ReturnType<typeof queueHandoffs>>[number];

/** Gate decisions that stopped or parked a call, as reviewers read them. */
const STOPPING_DECISIONS = ["deny", "ask", "defer"] as const;

/** How many of the conversation's latest messages the handoff page shows inline. */
export const HANDOFF_MESSAGES = 40;

/**
 * One handoff with everything a reviewer decides from, beside the decision: the record; the order it is about
 * (items, amounts, delivery, refunds and replacements on it and for the customer); the conversation as the
 * customer saw it; the customer's own words apart from the agent's; what the agent tried, in words; the rules
 * that stopped it, with their policy version; the pending call's state and result; who holds the conversation.
 */
export async function handoffDetail(db: PrismaTx, tenantId: string, handoffId: string) {
  const h = await db.handoff.findFirst({ where: { id: handoffId, tenantId }, include: { approvals: { orderBy: { createdAt: "asc" } } } });
  if (!h) throw new AppError("NOT_FOUND", "This handoff was not found.");
  const payload = parseHandoffPayload(h.payload);
  const [names, run, call, conversation, toolCalls, gateDecisions, messages, customerMessages] = await Promise.all([
    staffNames(db, tenantId),
    h.runId
      ? db.run.findFirst({ where: { id: h.runId, tenantId }, select: { id: true, phase: true, outcome: true, lastStopReason: true } })
      : null,
    h.toolCallId
      ? db.toolCall.findFirst({
          where: { id: h.toolCallId, tenantId },
          select: { status: true, isError: true, result: true, effectiveInput: true, idempotencyKey: true },
        })
      : null,
    db.conversation.findFirstOrThrow({
      where: { id: h.conversationId, tenantId },
      select: { id: true, status: true, ownerStaffId: true, customerId: true, verifiedCustomerId: true, verificationExpiresAt: true },
    }),
    h.runId
      ? db.toolCall.findMany({
          where: { runId: h.runId, tenantId },
          orderBy: [{ messageSeq: "asc" }, { position: "asc" }],
          select: {
            toolUseId: true,
            name: true,
            input: true,
            effectiveInput: true,
            status: true,
            isError: true,
            gateDecision: true,
            gateReason: true,
            result: true,
            review: true,
          },
        })
      : [],
    h.runId
      ? db.gateDecision.findMany({
          where: { runId: h.runId, tenantId, actor: "policy", decision: { in: [...STOPPING_DECISIONS] } },
          orderBy: { createdAt: "asc" },
          select: { toolUseId: true, gate: true, decision: true, reason: true, policyVersion: true, createdAt: true },
        })
      : [],
    db.message.findMany({
      where: { conversationId: h.conversationId, tenantId, shownToCustomer: true },
      orderBy: { seq: "desc" },
      take: HANDOFF_MESSAGES,
      select: { seq: true, author: true, staffId: true, displayText: true, createdAt: true },
    }),
    // The customer's own words for this request: what they wrote in the handoff's run (or, without a run, before it).
    db.message.findMany({
      where: {
        conversationId: h.conversationId,
        tenantId,
        author: "CUSTOMER",
        ...(h.runId ? { runId: h.runId } : { createdAt: { lte: h.createdAt } }),
      },
      orderBy: { seq: "desc" },
      take: 5,
      select: { displayText: true, createdAt: true },
    }),
  ]);
  const proposed = (payload.proposedInput ?? {}) as Record<string, unknown>;
  const orderNumber = payload.orderNumber ?? (typeof proposed.order_number === "string" ? proposed.order_number : null);
  const order = await orderFacts(db, tenantId, {
    orderNumber,
    customerId: payload.customer?.id ?? conversation.verifiedCustomerId ?? conversation.customerId,
    verifiedCustomerId: conversation.verifiedCustomerId,
  });
  const toolNames = new Map(toolCalls.map((c) => [c.toolUseId, c.name]));
  const shown = [...messages].reverse();
  return jsonify({
    handoff: consoleHandoff({ ...h, call }, names),
    run,
    toolCall: call,
    conversation: {
      id: conversation.id,
      status: conversation.status,
      ownerStaffId: conversation.ownerStaffId,
      ownerName: conversation.ownerStaffId ? (names.get(conversation.ownerStaffId) ?? null) : null,
      verified: !!conversation.verifiedCustomerId,
    },
    order,
    /** the conversation as the customer saw it (its latest messages, oldest first) */
    messages: shown.map((m) => ({
      seq: m.seq,
      from: m.author === "CUSTOMER" ? "customer" : m.author === "STAFF" ? "person" : m.author === "AGENT" ? "agent" : "system",
      name: m.author === "STAFF" && m.staffId ? (names.get(m.staffId) ?? "Support") : null,
      text: m.displayText ?? "",
      at: m.createdAt,
    })),
    earlierMessages: shown.length === HANDOFF_MESSAGES && (shown[0]?.seq ?? 0) > 1,
    customerWords: customerMessages
      .reverse()
      .map((m) => m.displayText ?? "")
      .filter(Boolean),
    /** the specialist (an agent run as a tool) that asked, outermost first ("Delivery … → Returns …"); null: the agent */
    specialist: payload.specialist ?? null,
    /** the agent's stated reason on the pending call (e.g. refund_order's `reason`), apart from the customer's words */
    agentReason: typeof proposed.reason === "string" ? proposed.reason : null,
    tried: describeToolCalls(toolCalls),
    agentAccount: agentsOwnAccount(payload.tried),
    stoppedBy: gateDecisions.map((g) => ({
      gate: g.gate,
      decision: g.decision,
      reason: g.reason,
      policyVersion: g.policyVersion,
      toolName: toolNames.get(g.toolUseId) ?? null,
      at: g.createdAt,
    })),
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
    // Their calls are read as soon as the handoffs are, beside the view's reads rather than after them.
    db.handoff
      .findMany({
        where: { conversationId: conv.id, tenantId },
        include: { approvals: { orderBy: { createdAt: "asc" } } },
        orderBy: { createdAt: "desc" },
        take: 20,
      })
      .then((rows) => withCalls(db, rows)),
    staffNames(db, tenantId),
  ]);
  return jsonify({
    conversation: {
      id: conv.id,
      status: conv.status,
      ownerStaffId: conv.ownerStaffId,
      ownerName: view.owner,
      customer,
      createdAt: conv.createdAt,
    },
    view,
    handoffs: handoffs.map((h) => consoleHandoff(h, names)),
  });
}
export type ConversationDetail = Awaited<ReturnType<typeof conversationDetail>>;

/**
 * Where a live view starts following the feed: it reads this, then loads its data. Same visibility rule as
 * eventsSince (only events below the oldest transaction still in flight), so an event that commits late
 * with a lower id is still delivered; at worst the view refetches once for something it already shows.
 */
export async function eventHead(db: PrismaTx, tenantId: string): Promise<string> {
  return (await feedHead(storeOf(db), tenantId)).toString();
}

export const EVENTS_PAGE = 200;

/**
 * Events after a cursor (exclusive), oldest first, for the shop (and one conversation, if given; or only those a
 * `topic` follows). The answer carries the cursor to ask from next — past every event read, shown or not; `more` says
 * a full page was read and the client should ask again at once rather than wait.
 */
export async function consoleEvents(db: PrismaTx, tenantId: string, cursor: bigint, conversationId?: string, topic?: FeedTopic) {
  return (await readEvents(db, tenantId, cursor, conversationId, topic)).page;
}

async function readEvents(db: PrismaTx, tenantId: string, cursor: bigint, conversationId?: string, topic?: FeedTopic) {
  const rows = await eventsSince(db, { tenantId, ...(conversationId ? { conversationId } : {}) }, cursor, EVENTS_PAGE);
  const last = rows[rows.length - 1];
  const shown = topic ? rows.filter((e) => topicFilter[topic](e.type)) : rows;
  const page = jsonify({
    cursor: (last?.id ?? cursor).toString(),
    more: rows.length === EVENTS_PAGE,
    events: shown.map((e) => ({ id: e.id, type: e.type, conversationId: e.conversationId, data: e.data, at: e.createdAt })),
  });
  return { page, read: rows.length };
}
export type ConsoleEvents = Awaited<ReturnType<typeof consoleEvents>> & {
  /** for one conversation: the agent's reply being written (lib/live/drafts) */
  draft?: { runId: string; text: string | null; n: number } | null;
};

/**
 * `consoleEvents`, but when nothing is there yet it waits (up to `waitMs`) for the process's listener to hear that
 * something was written for the shop (lib/live/hub) and reads again — a long poll instead of a poll per second. With a
 * `topic`, only what it follows answers (and wakes it): the events read meanwhile are skipped, the cursor moves past
 * them.
 */
export async function consoleEventsAfter(
  db: PrismaTx,
  tenantId: string,
  cursor: bigint,
  opts: {
    conversationId?: string;
    waitMs: number;
    /** the draft (its n) the caller shows, for a conversation */
    draftSeen?: number;
    topic?: FeedTopic;
  },
) {
  const deadline = Date.now() + opts.waitMs;
  // For one conversation: the reply being written too (lib/live/drafts) — a change of draft answers the long poll.
  const draftNow = () => (opts.conversationId ? currentDraft({ tenantId, conversationId: opts.conversationId }) : null);
  const draftChanged = () => {
    const d = draftNow();
    return d !== null && d.n !== opts.draftSeen && (d.text !== null || opts.draftSeen !== undefined);
  };
  let heard = listenerGeneration(); // as the last read began (see waitForFeed `since`)
  const read = (from: string | bigint) => {
    heard = listenerGeneration();
    return readEvents(db, tenantId, BigInt(from), opts.conversationId, opts.topic);
  };
  let { page } = await read(cursor);
  // A notification whose events are still held back by an older transaction (nothing read; for the queue, not yet
  // what it announced): read again shortly.
  const heldBack = (eventsRead: number) =>
    !eventsRead || (opts.topic === "queue" && !opts.conversationId && BigInt(page.cursor) < queueAnnouncedUpTo(tenantId));
  const scope = { tenantId, ...(opts.conversationId ? { conversationId: opts.conversationId } : { topic: opts.topic }) };
  while (!page.events.length && !draftChanged() && Date.now() < deadline) {
    // A full page of events the topic does not follow: read on at once.
    if (page.more) {
      ({ page } = await read(page.cursor));
      continue;
    }
    const how = await waitForFeed(scope, {
      timeoutMs: deadline - Date.now(),
      fallbackMs: Math.min(1500, deadline - Date.now()),
      since: heard,
    });
    // Quiet until the deadline: nothing was written for this poll, so nothing is read again (the next poll reads).
    if (how === "quiet") continue;
    for (let i = 0; i < 4 && !page.events.length && !draftChanged(); i++) {
      const next = await read(page.cursor);
      page = next.page;
      if (how === "notified" && heldBack(next.read)) await new Promise((r) => setTimeout(r, 100));
      else break;
    }
  }
  const d = draftNow();
  return { ...page, draft: d ? { runId: d.runId, text: d.text, n: d.n } : null };
}
export type ConsoleEvent = ConsoleEvents["events"][number];
export type { Jsonify };
