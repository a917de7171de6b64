import { z } from "zod";
import type { PrismaClient, PrismaTx, Json } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { getTool } from "@/lib/tools/registry";
import { evaluateGates } from "@/lib/gates/evaluate";
import { loadPolicy } from "@/lib/runtime/policy";
import { canonicalJson, idempotencyKey } from "@/lib/runtime/idempotency";
import { publishEvent } from "@/lib/events";
import { formatCents } from "@/lib/money";
import type { LeaseClaim } from "@/lib/runtime/run-end";

export const decisionSchema = z.object({
  handoffId: z.string().min(1).max(64),
  decision: z.enum(["approve", "deny", "edit"]),
  /** The version the reviewer saw: a decision binds to it, never to "whatever is pending now". */
  version: z.number().int().positive().optional(),
  reason: z.string().trim().max(1000).optional(),
  editedInput: z.record(z.string(), z.unknown()).optional(),
});
export type DecisionInput = z.infer<typeof decisionSchema>;

export type DecisionOutcome =
  | { kind: "approved"; runId: string; handoffId: string; resumable: boolean }
  | { kind: "denied"; runId: string; handoffId: string; resumable: boolean }
  | { kind: "awaiting_second_approval"; handoffId: string; approvals: number; required: number };

type Locked = NonNullable<Awaited<ReturnType<typeof lockHandoff>>>;

async function lockHandoff(tx: PrismaTx, tenantId: string, id: string) {
  // Row lock: racing decisions on one handoff are serialised; the first wins, the rest see its result.
  const rows = await tx.$queryRaw<Array<{ id: string }>>`SELECT id FROM "Handoff" WHERE id = ${id} AND "tenantId" = ${tenantId} FOR UPDATE`;
  if (!rows.length) return null;
  return tx.handoff.findUniqueOrThrow({ where: { id }, include: { approvals: true } });
}

/**
 * The pending tool call resumes only when no other call of the same assistant message still waits. With
 * `claimFor`, the decider takes the run's lease in the same commit and resumes it itself. Returns whether the
 * run was released to resume.
 */
async function releaseRunIfSettled(tx: PrismaTx, runId: string, claimFor?: LeaseClaim): Promise<boolean> {
  const call = await tx.toolCall.findFirst({ where: { runId, status: "PARKED" } });
  if (call) return false;
  const released = await tx.$executeRaw`
    UPDATE "Run" SET phase = 'RUNNING', "updatedAt" = now(), "leaseOwner" = ${claimFor?.workerId ?? null},
           "leaseExpiresAt" = CASE WHEN ${!!claimFor}::boolean THEN now() + make_interval(secs => ${(claimFor?.leaseMs ?? 0) / 1000}::float8) END
    WHERE id = ${runId} AND phase = 'WAITING_FOR_APPROVAL'`;
  return released === 1;
}

/** Marks an approval handoff expired: its own outcome, told to the model as "expired", never as "denied". */
export async function expireHandoff(tx: PrismaTx, h: { id: string; runId: string | null; toolCallId: string | null; tenantId: string; conversationId: string; version: number }) {
  await tx.handoff.update({ where: { id: h.id }, data: { status: "EXPIRED", decision: "expired", decidedAt: new Date(), version: h.version + 1, claimedById: null, claimExpiresAt: null } });
  if (h.toolCallId) {
    await tx.toolCall.update({
      where: { id: h.toolCallId },
      data: {
        status: "EXPIRED",
        isError: true,
        review: { decision: "expired" },
        result: { error_category: "business_rule", is_retryable: false, message: "The approval request expired without a decision. Nothing was done. This is not a denial: tell the customer a person will follow up.", review: { decision: "expired" } },
      },
    });
  }
  await tx.auditEvent.create({ data: { tenantId: h.tenantId, runId: h.runId, actor: "harness", action: "handoff.expired", subject: h.id, data: {} } });
  await publishEvent(tx, { tenantId: h.tenantId, conversationId: h.conversationId, type: "handoff.updated", data: { handoffId: h.id, status: "EXPIRED" } });
  if (h.runId) await releaseRunIfSettled(tx, h.runId);
}

/** Expires every approval past its TTL; returns the runs that may now resume. */
export async function expireDueApprovals(db: PrismaClient, now = new Date()): Promise<string[]> {
  const due = await db.handoff.findMany({ where: { kind: "APPROVAL", status: "PENDING", expiresAt: { lt: now } }, select: { id: true, tenantId: true } });
  const runs: string[] = [];
  for (const d of due) {
    await db.$transaction(async (tx) => {
      const h = await lockHandoff(tx, d.tenantId, d.id);
      if (!h || h.status !== "PENDING") return;
      await expireHandoff(tx, h);
      if (h.runId) runs.push(h.runId);
    });
  }
  return runs;
}

/**
 * A reviewer's decision on an approval handoff — trusted application state, never a chat message. Refused
 * with a clear code and nothing changed when: the id is another tenant's (NOT_FOUND), the reviewer is not
 * staff of the tenant (FORBIDDEN), the handoff was already decided (ALREADY_DECIDED) or expired (EXPIRED),
 * it changed since the version quoted (STALE_VERSION), another reviewer holds the claim (CLAIMED_BY_OTHER),
 * the amount is over the reviewer's authority (OVER_AUTHORITY), the same person would be both approvers
 * (SAME_APPROVER), or the input is bad (INVALID_INPUT, GATE_DENIED for an edit the gates refuse).
 * Approve/edit marks THAT call to run; the caller resumes the run (or a worker does).
 */
export async function decideHandoff(db: PrismaClient, actor: { tenantId: string; staffId: string }, raw: unknown, opts: { claimFor?: LeaseClaim } = {}): Promise<DecisionOutcome> {
  const parsed = decisionSchema.safeParse(raw);
  if (!parsed.success) throw new AppError("INVALID_INPUT", parsed.error.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; "));
  const input = parsed.data;
  let expiredNow = false;

  const outcome = await db.$transaction(async (tx) => {
    const h = await lockHandoff(tx, actor.tenantId, input.handoffId);
    if (!h) throw new AppError("NOT_FOUND", "This handoff was not found.");
    const staff = await tx.staffUser.findFirst({ where: { id: actor.staffId, tenantId: actor.tenantId } });
    if (!staff) throw new AppError("FORBIDDEN", "You are not a reviewer of this shop.");
    if (h.kind !== "APPROVAL") throw new AppError("INVALID_INPUT", "Escalations are resolved by taking the conversation over, not by approving.");
    if (h.status === "EXPIRED") throw new AppError("EXPIRED", "This approval request expired; the customer was told nothing was done.");
    if (h.status !== "PENDING") {
      const by = h.decidedById ? await tx.staffUser.findUnique({ where: { id: h.decidedById } }) : null;
      throw new AppError("ALREADY_DECIDED", `Already ${h.status.toLowerCase()}${by ? ` by ${by.name}` : ""}.`, { status: h.status, decidedBy: by?.name ?? null });
    }
    if (h.expiresAt && h.expiresAt < new Date()) {
      await expireHandoff(tx, h);
      expiredNow = true;
      return null;
    }
    if (input.version !== undefined && input.version !== h.version) {
      throw new AppError("STALE_VERSION", "This request changed since you opened it. Reload it and decide again.", { currentVersion: h.version });
    }
    if (h.claimedById && h.claimedById !== staff.id && h.claimExpiresAt && h.claimExpiresAt > new Date()) {
      const holder = await tx.staffUser.findUnique({ where: { id: h.claimedById } });
      throw new AppError("CLAIMED_BY_OTHER", `${holder?.name ?? "Another reviewer"} is working on this item.`);
    }
    if (!h.toolCallId || !h.runId) throw new AppError("INVALID_INPUT", "This handoff has no pending call.");
    const call = await tx.toolCall.findUniqueOrThrow({ where: { id: h.toolCallId } });
    if (call.status !== "PARKED") throw new AppError("ALREADY_DECIDED", "The pending call was already resolved.");

    if (input.decision === "deny") {
      if (!input.reason) throw new AppError("INVALID_INPUT", "A reason is required to deny.");
      return deny(tx, h, call, staff, input.reason, opts.claimFor);
    }
    if (h.approvals.some((a) => a.staffId === staff.id)) {
      throw new AppError("SAME_APPROVER", "You already approved this; a second, different reviewer must approve it.");
    }

    // What will run: the model's call, an earlier approver's edit, or this reviewer's edit (re-gated).
    let executed = (h.editedInput ?? call.input) as Record<string, unknown>;
    let amount = h.amountCents;
    if (input.decision === "edit") {
      const edited = await regateEdit(tx, h, call, staff, input.editedInput);
      executed = edited.input;
      amount = edited.amountCents ?? amount;
    }
    if (amount !== null && staff.authorityLimitCents !== null && amount > staff.authorityLimitCents) {
      throw new AppError("OVER_AUTHORITY", `${formatCents(amount)} is above your approval authority of ${formatCents(staff.authorityLimitCents)}.`);
    }

    const edited = canonicalJson(executed) !== canonicalJson(call.input);
    await tx.handoffApproval.create({ data: { handoffId: h.id, staffId: staff.id, version: h.version } });
    const approvals = h.approvals.length + 1;
    if (approvals < h.requiredApprovals) {
      await tx.handoff.update({ where: { id: h.id }, data: { version: h.version + 1, ...(edited ? { editedInput: executed as Json, amountCents: amount } : {}), claimedById: null, claimExpiresAt: null } });
      await tx.auditEvent.create({ data: { tenantId: h.tenantId, runId: h.runId, actor: staff.email, action: "handoff.first_approval", subject: h.id, data: { edited, executed: executed as Json } } });
      await publishEvent(tx, { tenantId: h.tenantId, conversationId: h.conversationId, type: "handoff.updated", data: { handoffId: h.id, status: "PENDING", approvals } });
      return { kind: "awaiting_second_approval" as const, handoffId: h.id, approvals, required: h.requiredApprovals };
    }

    const approverNames = [...(await tx.staffUser.findMany({ where: { id: { in: h.approvals.map((a) => a.staffId) } } })).map((s) => s.name), staff.name];
    const review = edited
      ? { decision: "edited", by: approverNames.join(" and "), original_input: call.input, executed_input: executed, amount_cents: amount, note: input.reason ?? null }
      : { decision: "approved", by: approverNames.join(" and "), amount_cents: amount };
    await tx.handoff.update({
      where: { id: h.id },
      data: { status: edited ? "EDITED" : "APPROVED", decision: edited ? "edit" : "approve", decidedById: staff.id, claimedById: null, claimExpiresAt: null, decidedAt: new Date(), decisionReason: input.reason ?? null, version: h.version + 1, ...(edited ? { editedInput: executed as Json, amountCents: amount } : {}) },
    });
    await tx.toolCall.update({
      where: { id: call.id },
      data: {
        status: "APPROVED",
        effectiveInput: executed as Json,
        // An edit is a different operation: it runs under its own idempotency key.
        idempotencyKey: edited ? idempotencyKey({ tenantId: h.tenantId, runId: h.runId!, toolUseId: call.toolUseId, toolName: call.name, input: executed }) : call.idempotencyKey,
        review: review as Json,
        decidedById: staff.id,
      },
    });
    await tx.auditEvent.create({ data: { tenantId: h.tenantId, runId: h.runId, actor: staff.email, action: edited ? "handoff.edited" : "handoff.approved", subject: h.id, data: review as Json } });
    await publishEvent(tx, { tenantId: h.tenantId, conversationId: h.conversationId, type: "handoff.updated", data: { handoffId: h.id, status: edited ? "EDITED" : "APPROVED" } });
    const resumable = await releaseRunIfSettled(tx, h.runId!, opts.claimFor);
    return { kind: "approved" as const, runId: h.runId!, handoffId: h.id, resumable };
  });

  if (expiredNow) throw new AppError("EXPIRED", "This approval request expired before your decision; the customer is told nothing was done.");
  return outcome!;
}

async function deny(tx: PrismaTx, h: Locked, call: { id: string }, staff: { id: string; name: string; email: string }, reason: string, claimFor?: LeaseClaim): Promise<DecisionOutcome> {
  const review = { decision: "denied", by: staff.name, reason };
  await tx.handoff.update({ where: { id: h.id }, data: { status: "DENIED", decision: "deny", decidedById: staff.id, claimedById: null, claimExpiresAt: null, decidedAt: new Date(), decisionReason: reason, version: h.version + 1 } });
  await tx.toolCall.update({
    where: { id: call.id },
    data: {
      status: "DENIED",
      isError: true,
      review,
      decidedById: staff.id,
      result: { error_category: "permission", is_retryable: false, message: `A reviewer (${staff.name}) denied this request: ${reason}. Nothing was done. Explain this to the customer; do not retry.`, review },
    },
  });
  await tx.auditEvent.create({ data: { tenantId: h.tenantId, runId: h.runId, actor: staff.email, action: "handoff.denied", subject: h.id, data: review } });
  await publishEvent(tx, { tenantId: h.tenantId, conversationId: h.conversationId, type: "handoff.updated", data: { handoffId: h.id, status: "DENIED" } });
  const resumable = await releaseRunIfSettled(tx, h.runId!, claimFor);
  return { kind: "denied", runId: h.runId!, handoffId: h.id, resumable };
}

/** An edit goes through the gates again, with the reviewer's authority in place of the approval band. */
async function regateEdit(tx: PrismaTx, h: Locked, call: { name: string; input: unknown; createdAt: Date }, staff: { id: string; name: string; authorityLimitCents: number | null }, editedInput: unknown) {
  const tool = getTool(call.name);
  if (!tool) throw new AppError("INVALID_INPUT", `Unknown tool ${call.name}.`);
  if (!editedInput) throw new AppError("INVALID_INPUT", "An edit needs the new arguments.");
  const parsed = tool.inputSchema.safeParse(editedInput);
  if (!parsed.success) throw new AppError("INVALID_INPUT", `Invalid arguments: ${parsed.error.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; ")}`);
  const input = parsed.data as Record<string, unknown>;
  const original = call.input as Record<string, unknown>;
  if (typeof original.order_number === "string" && String(input.order_number ?? "").toUpperCase() !== original.order_number.toUpperCase()) {
    throw new AppError("INVALID_INPUT", "An edit may change the terms, not which order it applies to.");
  }
  const facts = await tool.facts(input, { db: tx, tenantId: h.tenantId });
  const policy = await loadPolicy(tx, h.tenantId);
  const conversation = await tx.conversation.findUniqueOrThrow({ where: { id: h.conversationId } });
  const { verdict, records } = evaluateGates({
    toolName: call.name, input, canonicalInput: canonicalJson(input), facts, isKnownTool: true, accountAction: tool.accountAction, sideEffect: tool.sideEffect,
    // The customer's identity was checked when the call was proposed; the edit is judged as of then.
    state: { verifiedCustomerId: conversation.verifiedCustomerId, verificationExpiresAt: null, now: call.createdAt, previousCall: null },
    policy,
    reviewer: { id: staff.id, name: staff.name, authorityLimitCents: staff.authorityLimitCents },
  });
  await tx.gateDecision.createMany({
    data: records.map((r) => ({ tenantId: h.tenantId, runId: h.runId!, toolCallId: h.toolCallId, toolUseId: (h.payload as { toolUseId?: string }).toolUseId ?? "", gate: r.gate, decision: r.decision, reason: r.reason, policyVersion: policy.version, actor: staff.id })),
  });
  if (verdict.decision === "deny") {
    throw new AppError(verdict.errorCategory === "permission" && /authority/.test(verdict.reason) ? "OVER_AUTHORITY" : "GATE_DENIED", verdict.reason);
  }
  return { input, amountCents: facts.amountCents };
}
