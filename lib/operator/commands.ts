import type { PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { advanceConversationFrom, claimFor } from "@/lib/runtime/advance";
import { customerTextSchema, openConversation, receiveCustomerMessage } from "@/lib/conversations/intake";
import { resumeRun } from "@/lib/runtime/resume";
import { storeOf } from "@/lib/db/kysely";
import { loadPolicy } from "@/lib/runtime/policy";
import { withCalls } from "@/lib/handoffs/calls";
import { presentHandoff } from "@/lib/handoffs/present";
import { staffNames } from "@/lib/staff-names";
import { afterCursor, committedRows, decodeCursor, pageOf } from "@/lib/api/cursor";

/** The operator surface (CLI, API): thin functions over the runtime, each returning plain JSON-able data. */

export async function tenantBySlug(db: PrismaTx, slug: string) {
  const tenant = await db.tenant.findUnique({ where: { slug } });
  if (!tenant) throw new AppError("NOT_FOUND", `No shop called ${slug}.`);
  return tenant;
}

/** Which handoffs an operator asks for; a status or kind the product does not have is INVALID_INPUT. */
export interface HandoffFilter {
  status?: string;
  kind?: string;
  conversationId?: string;
}

function handoffWhere(tenantId: string, filter: HandoffFilter) {
  const statuses = ["PENDING", "APPROVED", "DENIED", "EDITED", "EXPIRED", "RESOLVED", "CANCELLED"];
  if (filter.status && !statuses.includes(filter.status.toUpperCase()))
    throw new AppError("INVALID_INPUT", `Unknown status ${filter.status}.`);
  if (filter.kind && !["APPROVAL", "ESCALATION"].includes(filter.kind.toUpperCase()))
    throw new AppError("INVALID_INPUT", `Unknown kind ${filter.kind}.`);
  return {
    tenantId,
    ...(filter.conversationId ? { conversationId: filter.conversationId } : {}),
    ...(filter.status ? { status: filter.status.toUpperCase() as never } : {}),
    ...(filter.kind ? { kind: filter.kind.toUpperCase() as never } : {}),
  };
}

async function presentHandoffs<T extends Parameters<typeof presentHandoff>[0] & { tenantId: string; toolCallId: string | null }>(
  db: PrismaTx,
  tenantId: string,
  rows: T[],
) {
  const [withCall, names] = await Promise.all([withCalls(db, rows), staffNames(db, tenantId)]);
  return withCall.map((h) => presentHandoff(h, names));
}

/** Every handoff matching the filter, oldest first — for a list known to be short (`say`: a conversation's pending). */
export async function listHandoffs(db: PrismaTx, tenantId: string, filter: HandoffFilter = {}) {
  const rows = await db.handoff.findMany({
    where: handoffWhere(tenantId, filter),
    include: { approvals: true },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  return presentHandoffs(db, tenantId, rows);
}

/**
 * A page of an operator's list, as the JSON API pages its own: at most `limit` rows after the `cursor` a previous
 * page gave out, oldest first by (createdAt, id) — no row repeated or skipped when new ones arrive meanwhile.
 */
export interface PageRequest {
  cursor?: string;
  limit: number;
}
const CLI_CURSOR_REFUSAL = "--cursor: not a cursor a page of this list gave out (its nextCursor).";

/** One page of the shop's handoffs matching the filter, and the cursor of the next page (null on the last). */
export async function pageOfHandoffs(db: PrismaTx, tenantId: string, filter: HandoffFilter, page: PageRequest) {
  const where = handoffWhere(tenantId, filter);
  const after = afterCursor(decodeCursor(page.cursor, CLI_CURSOR_REFUSAL));
  const rows = await db.handoff.findMany({
    where: { AND: [where, after, await committedRows(db)] },
    include: { approvals: true },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    take: page.limit + 1,
  });
  const { rows: handoffs, nextCursor } = pageOf(rows, page.limit);
  return { handoffs: await presentHandoffs(db, tenantId, handoffs), nextCursor };
}

/** New customer-visible messages since a seq: agent replies, notices, a person's replies. */
export async function repliesSince(db: PrismaTx, conversationId: string, afterSeq: number) {
  const rows = await db.message.findMany({
    where: { conversationId, seq: { gt: afterSeq }, shownToCustomer: true, author: { not: "CUSTOMER" } },
    orderBy: { seq: "asc" },
  });
  return rows.map((m) => ({ seq: m.seq, author: m.author, text: m.displayText ?? "" }));
}

export async function say(deps: RuntimeDeps, a: { tenant: string; conversationId?: string; customerEmail?: string; text: unknown }) {
  const tenant = await tenantBySlug(deps.db, a.tenant);
  // Validate before anything is written: a bad message must not leave an empty conversation behind.
  const text = customerTextSchema.safeParse(a.text);
  if (!text.success) throw new AppError("INVALID_INPUT", text.error.issues[0]?.message ?? "Invalid message.");
  let conversationId = a.conversationId;
  let token: string | undefined;
  if (conversationId) {
    const found = await deps.db.conversation.findFirst({ where: { id: conversationId, tenantId: tenant.id } });
    if (!found) throw new AppError("NOT_FOUND", "This conversation was not found.");
  } else {
    let customerId: string | null = null;
    if (a.customerEmail) {
      const customer = await deps.db.customer.findUnique({
        where: { tenantId_email: { tenantId: tenant.id, email: a.customerEmail.toLowerCase() } },
      });
      if (!customer) throw new AppError("NOT_FOUND", `No customer ${a.customerEmail} in ${tenant.slug}.`);
      customerId = customer.id;
    }
    const policy = await loadPolicy(storeOf(deps.db), tenant.id);
    const opened = await openConversation(deps.db, {
      tenantId: tenant.id,
      customerId,
      verificationTtlMinutes: policy.rules.verificationTtlMinutes,
    });
    conversationId = opened.conversation.id;
    token = opened.token;
  }
  const before = (await deps.db.conversation.findUniqueOrThrow({ where: { id: conversationId } })).messageCount;
  // The run is created with this process's lease, so it answers here even if a background worker is polling.
  const claim = claimFor(deps);
  const intake = await receiveCustomerMessage(deps.db, {
    tenantId: tenant.id,
    conversationId,
    text: a.text,
    model: deps.model.model,
    claimFor: claim,
  });
  if (intake.kind === "started") await advanceConversationFrom(deps, intake.runId, { claimedAs: claim, run: intake.run });
  const conversation = await deps.db.conversation.findUniqueOrThrow({ where: { id: conversationId } });
  const runId = intake.kind === "to_person" ? null : intake.runId;
  const run = runId ? await deps.db.run.findUnique({ where: { id: runId } }) : null;
  // This conversation's pending handoffs only, filtered by the database: the shop may hold many thousands of others.
  const handoffs = await listHandoffs(deps.db, tenant.id, { conversationId, status: "PENDING" });
  return {
    conversationId,
    ...(token ? { token } : {}),
    runId,
    phase: run?.phase ?? null,
    queued: intake.kind === "queued",
    conversationStatus: conversation.status,
    replies: await repliesSince(deps.db, conversationId, before),
    handoffs,
  };
}

export async function decide(
  deps: RuntimeDeps,
  a: { handoffId: string; staffEmail: string; decision: string; input?: unknown; reason?: string; version?: number },
) {
  const staff = await deps.db.staffUser.findUnique({ where: { email: a.staffEmail.toLowerCase() } });
  if (!staff) throw new AppError("FORBIDDEN", `No staff member ${a.staffEmail}.`);
  const existing = await deps.db.handoff.findFirst({ where: { id: a.handoffId, tenantId: staff.tenantId } });
  if (!existing) throw new AppError("NOT_FOUND", "This handoff was not found.");
  const before = (await deps.db.conversation.findUniqueOrThrow({ where: { id: existing.conversationId } })).messageCount;
  const { outcome } = await resumeRun(
    deps,
    { tenantId: staff.tenantId, staffId: staff.id },
    { handoffId: a.handoffId, decision: a.decision, version: a.version, reason: a.reason, editedInput: a.input },
  );
  const h = await deps.db.handoff.findUniqueOrThrow({ where: { id: a.handoffId }, include: { approvals: true } });
  const run = h.runId ? await deps.db.run.findUnique({ where: { id: h.runId } }) : null;
  return {
    outcome: outcome.kind,
    handoff: presentHandoff((await withCalls(deps.db, [h]))[0]!, await staffNames(deps.db, staff.tenantId)),
    phase: run?.phase ?? null,
    replies: await repliesSince(deps.db, h.conversationId, before),
  };
}

/**
 * One page of the shop's effect ledger, oldest first, and the cursor of the next page (null on the last); with
 * `runId`, only that run's effects (a run of another shop, or none, is NOT_FOUND rather than an empty page).
 */
export async function listEffects(db: PrismaTx, tenantSlug: string, page: PageRequest, filter: { runId?: string } = {}) {
  const tenant = await tenantBySlug(db, tenantSlug);
  const after = afterCursor(decodeCursor(page.cursor, CLI_CURSOR_REFUSAL));
  if (filter.runId && !(await db.run.findFirst({ where: { id: filter.runId, tenantId: tenant.id }, select: { id: true } })))
    throw new AppError("NOT_FOUND", `This shop has no run ${filter.runId}.`);
  const rows = await db.effectLedger.findMany({
    where: { AND: [{ tenantId: tenant.id }, filter.runId ? { runId: filter.runId } : {}, after, await committedRows(db)] },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
    take: page.limit + 1,
  });
  const { rows: effects, nextCursor } = pageOf(rows, page.limit);
  return { effects, nextCursor };
}
