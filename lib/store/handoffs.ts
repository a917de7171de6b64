// Handoffs: a parked call waiting for a person's decision (APPROVAL), or a conversation handed to a person
// (ESCALATION). Written in the statement that parks or escalates; decided under the row's lock.
import { sql } from "kysely";
import { type HandoffKind, type HandoffStatus, type Store, sendTogether } from "@/lib/db/kysely";
import { addEvent, addWebhookEvent } from "./events";
import { assertHandoffTransition } from "./phases";
import { json, type Sql, type Statement, type Values, type WriteOptions } from "./statement";

export interface NewHandoff {
  id: string;
  tenantId: string;
  conversationId: string;
  runId: string | null;
  toolCallId?: string | null;
  kind: HandoffKind;
  /** the structured, self-contained record (lib/handoffs/record) */
  payload: unknown;
  amountCents?: number | null;
  requiredApprovals?: number;
  expiresAt?: Date | null;
}

/**
 * Adds a handoff (CTE `name`, returning id), its `handoff.created` feed event and webhook. An escalation is opened
 * at most once per conversation while one is pending (a partial unique index; a repeat inserts nothing and the
 * pending one stands), and marks a conversation the agent still owns as waiting for a person — that status change
 * belongs to the statement's conversation update (see lib/store/transcript `changeConversation`).
 */
export function addHandoff(s: Statement, name: string, h: NewHandoff, opts: WriteOptions = {}): void {
  s.insert(
    name,
    "Handoff",
    {
      id: h.id,
      tenantId: h.tenantId,
      conversationId: h.conversationId,
      runId: h.runId,
      toolCallId: h.toolCallId ?? null,
      kind: sql`${h.kind}::"HandoffKind"`,
      payload: json(h.payload),
      amountCents: h.amountCents ?? null,
      requiredApprovals: h.requiredApprovals ?? 1,
      expiresAt: h.expiresAt ?? null,
      updatedAt: sql`now()`,
    },
    {
      ...opts,
      onConflict: h.kind === "ESCALATION" ? sql`("conversationId") WHERE kind = 'ESCALATION' AND status = 'PENDING' DO NOTHING` : undefined,
      returning: sql`id`,
    },
  );
  const ref = sql.raw(name);
  addEvent(
    s,
    `${name}_ev`,
    {
      tenantId: h.tenantId,
      conversationId: h.conversationId,
      type: "handoff.created",
      data: sql`jsonb_build_object('handoffId', ${ref}.id, 'kind', ${h.kind}::text)`,
    },
    { from: [name] },
  );
  addWebhookEvent(
    s,
    `${name}_wh`,
    {
      tenantId: h.tenantId,
      type: h.kind === "ESCALATION" ? "escalation.created" : "handoff.created",
      payload: sql`jsonb_build_object('handoffId', ${ref}.id, 'kind', ${h.kind}::text, 'conversationId', ${h.conversationId}::text,
        'runId', ${h.runId}::text, 'amountCents', ${h.amountCents ?? null}::int, 'record', ${json(h.payload)})`,
    },
    { from: [name] },
  );
}

/** A handoff as a decision sees it, locked together with its run (see `lockForDecision`). */
export interface LockedHandoff {
  id: string;
  tenantId: string;
  conversationId: string;
  runId: string | null;
  toolCallId: string | null;
  kind: HandoffKind;
  status: HandoffStatus;
  version: number;
  payload: unknown;
  amountCents: number | null;
  requiredApprovals: number;
  expiresAt: Date | null;
  claimedById: string | null;
  claimExpiresAt: Date | null;
  decidedById: string | null;
  editedInput: unknown;
  createdAt: Date;
  runPhase: string | null;
  approverIds: string[];
  /** the names of its approvers so far, in order */
  approverNames: string[];
  /** the names of those whose approval still stands (`approvalStands`), in order: the approvals that count */
  standingApprovers: string[];
  /** the deciding staff member, if asked for and active in the tenant */
  staff: { id: string; name: string; email: string; authorityLimitCents: number | null } | null;
  /** the names of whoever decided or claims it (for the refusals that name them) */
  decidedByName: string | null;
  claimedByName: string | null;
  /** the pending call it holds */
  call: {
    id: string;
    toolUseId: string;
    name: string;
    input: unknown;
    status: string;
    idempotencyKey: string | null;
    createdAt: Date;
  } | null;
}

/**
 * An approval stands while its approver (`s`, their StaffUser row) may still give it: active in the handoff's shop,
 * with an authority that covers `amount`. One that no longer stands is not counted — neither when the next approval
 * comes (`lockForDecision`) nor when the approved call runs (lib/runtime/execution) — however the person's row was
 * changed (lib/settings/staff withdraws them at once; an operator's UPDATE would not).
 */
export const approvalStands = (a: { tenantId: Sql | string; amountCents: Sql }) =>
  sql<boolean>`s."deactivatedAt" IS NULL AND s."tenantId" = ${a.tenantId}
    AND (s."authorityLimitCents" IS NULL OR ${a.amountCents} IS NULL OR s."authorityLimitCents" >= ${a.amountCents})`;

/**
 * Withdraws a person's approvals of items still pending — they were deactivated, or their authority no longer covers
 * an item's amount (`aboveCents`): each item waits for as many approvals as before, shows who approved it truthfully,
 * and its version moves (a reviewer who opened it before decides again on what it now holds). Audited per item. The
 * items are locked as a decision locks them, so a decision that raced this one either counted the approval and was
 * final first (the approved call then checks its approvers again when it runs), or sees it withdrawn.
 */
export function withdrawApprovals(
  s: Statement,
  a: { tenantId: string; staffId: string; actor: string; why: "deactivated" | "authority_lowered"; aboveCents?: number },
): void {
  const covered = a.aboveCents === undefined ? sql<boolean>`true` : sql<boolean>`"Handoff"."amountCents" > ${a.aboveCents}`;
  s.update(
    "withdrawn_from",
    "Handoff",
    { version: sql`"Handoff".version + 1`, updatedAt: sql`now()` },
    sql<boolean>`"Handoff"."tenantId" = ${a.tenantId} AND "Handoff".status = 'PENDING' AND ${covered}
      AND "Handoff".id IN (SELECT "handoffId" FROM "HandoffApproval" WHERE "staffId" = ${a.staffId})`,
    { returning: sql`"Handoff".id, "Handoff"."conversationId", "Handoff"."runId"` },
  );
  s.delete(
    "withdrawn",
    "HandoffApproval",
    sql<boolean>`"HandoffApproval"."staffId" = ${a.staffId} AND "HandoffApproval"."handoffId" = withdrawn_from.id`,
    { from: ["withdrawn_from"] },
  );
  s.insert(
    "withdrawn_audit",
    "AuditEvent",
    {
      id: sql`gen_random_uuid()::text`,
      tenantId: a.tenantId,
      runId: sql`withdrawn_from."runId"`,
      actor: a.actor,
      action: "handoff.approval_withdrawn",
      subject: sql`withdrawn_from.id`,
      data: json({ staffId: a.staffId, why: a.why }),
    },
    { from: ["withdrawn_from"] },
  );
  addEvent(
    s,
    "withdrawn_ev",
    {
      tenantId: a.tenantId,
      conversationId: sql`withdrawn_from."conversationId"`,
      type: "handoff.updated",
      data: sql`jsonb_build_object('handoffId', withdrawn_from.id, 'status', 'PENDING')`,
    },
    { from: ["withdrawn_from"] },
  );
}

/**
 * Locks a handoff of the caller's tenant AND its run (in that order, every decider and the expiry alike): racing
 * decisions on one handoff are serialised — the first wins, the rest see its result — and decisions on two calls of
 * one run too, so the last one to settle sees the other's outcome and resumes the run. Another tenant's id: null.
 * What a decision checks (its approvers so far, the decider, the pending call) is read by the second statement, whose
 * snapshot is taken once the handoff is ours: a decider that waited for the lock sees what the one before it wrote.
 */
/** What the second statement of `lockForDecision` reads besides the call. */
type DecisionChecks = Pick<
  LockedHandoff,
  "runPhase" | "approverIds" | "approverNames" | "standingApprovers" | "staff" | "decidedByName" | "claimedByName"
>;

export async function lockForDecision(
  db: Store,
  tenantId: string,
  handoffId: string,
  staffId: string | null = null,
): Promise<LockedHandoff | null> {
  // Sent together (one round trip), run in order: the handoff's lock; then its run's lock with what the decision
  // checks — a statement of its own, whose snapshot is taken once the handoff's lock is granted, so it sees every
  // decision committed before. It finds the run through the handoff, as the first statement does.
  const [locked, checks] = await sendTogether(db, [
    sql`
    SELECT h.id, h."tenantId", h."conversationId", h."runId", h."toolCallId", h.kind, h.status, h.version, h.payload, h."amountCents",
           h."requiredApprovals", h."expiresAt", h."claimedById", h."claimExpiresAt", h."decidedById", h."editedInput", h."createdAt"
    FROM "Handoff" h WHERE h.id = ${handoffId} AND h."tenantId" = ${tenantId}
    FOR UPDATE`,
    sql`
    WITH h AS (SELECT "runId", "toolCallId", "decidedById", "claimedById" FROM "Handoff" WHERE id = ${handoffId} AND "tenantId" = ${tenantId}),
         run AS (SELECT phase FROM "Run" WHERE id = (SELECT "runId" FROM h) FOR UPDATE)
    SELECT (SELECT phase FROM run) AS "runPhase",
           coalesce(ap.ids, '{}') AS "approverIds", coalesce(ap.names, '{}') AS "approverNames",
           coalesce(ap.standing, '{}') AS "standingApprovers",
           (SELECT jsonb_build_object('id', s.id, 'name', s.name, 'email', s.email, 'authorityLimitCents', s."authorityLimitCents")
              FROM "StaffUser" s WHERE s.id = ${staffId} AND s."tenantId" = ${tenantId} AND s."deactivatedAt" IS NULL) AS staff,
           (SELECT s.name FROM "StaffUser" s WHERE s.id = (SELECT "decidedById" FROM h)) AS "decidedByName",
           (SELECT s.name FROM "StaffUser" s WHERE s.id = (SELECT "claimedById" FROM h)) AS "claimedByName",
           (SELECT jsonb_build_object('id', c.id, 'toolUseId', c."toolUseId", 'name', c.name, 'input', c.input, 'status', c.status,
                     'idempotencyKey', c."idempotencyKey", 'createdAt', to_char(c."createdAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
              FROM "ToolCall" c WHERE c.id = (SELECT "toolCallId" FROM h)) AS call
    FROM (SELECT array_agg(a."staffId" ORDER BY a."createdAt") AS ids, array_agg(s.name ORDER BY a."createdAt") AS names,
                 array_agg(s.name ORDER BY a."createdAt") FILTER (WHERE ${approvalStands({
                   tenantId,
                   amountCents: sql`(SELECT "amountCents" FROM "Handoff" WHERE id = ${handoffId})`,
                 })}) AS standing
          FROM "HandoffApproval" a JOIN "StaffUser" s ON s.id = a."staffId" WHERE a."handoffId" = ${handoffId}) ap`,
  ]);
  const h = locked!.rows[0] as Omit<LockedHandoff, keyof DecisionChecks | "call"> | undefined;
  if (!h) return null;
  const checked = checks!.rows[0] as DecisionChecks & {
    call: (Omit<NonNullable<LockedHandoff["call"]>, "createdAt"> & { createdAt: string }) | null;
  };
  const call = checked.call ? { ...checked.call, createdAt: new Date(checked.call.createdAt) } : null;
  return { ...h, ...checked, call };
}

/** Adds the UPDATE of a handoff (its version goes up with every change; a status change is checked). */
export function updateHandoff(
  s: Statement,
  name: string,
  h: { id: string; version: number; status: HandoffStatus },
  change: Values<"Handoff"> & { status?: HandoffStatus },
  opts: Omit<WriteOptions, "where"> = {},
): void {
  const { status, ...rest } = change;
  if (status && status !== h.status) assertHandoffTransition(h.status, status);
  s.update(
    name,
    "Handoff",
    {
      ...rest,
      ...(status ? { status: sql`${status}::"HandoffStatus"` } : {}),
      version: h.version + 1,
      updatedAt: sql`now()`,
    },
    // Bound to the version read under the lock: a change in between would make this match nothing.
    sql<boolean>`"Handoff".id = ${h.id} AND "Handoff".version = ${h.version}`,
    { ...opts, returning: sql`"Handoff".id` },
  );
}

/** Pending approvals of a run (what a customer is told waits), oldest first. */
export async function pendingApprovals(db: Store, runId: string) {
  return db
    .selectFrom("Handoff")
    .select(["id", "payload", "amountCents"])
    .where("runId", "=", runId)
    .where("kind", "=", "APPROVAL")
    .where("status", "=", "PENDING")
    .orderBy("createdAt")
    .execute();
}

/** The conversation's pending escalation, if any. */
export async function pendingEscalation(db: Store, conversationId: string) {
  return db
    .selectFrom("Handoff")
    .select(["id", "version"])
    .where("conversationId", "=", conversationId)
    .where("kind", "=", "ESCALATION")
    .where("status", "=", "PENDING")
    .executeTakeFirst();
}

/** Approval handoffs past their expiry (for the worker), oldest first. */
export async function dueApprovalExpiries(db: Store, now: Date, opts: { skip?: readonly string[]; limit?: number } = {}) {
  let q = db
    .selectFrom("Handoff")
    .select(["id", "tenantId"])
    .where("kind", "=", "APPROVAL")
    .where("status", "=", "PENDING")
    .where("expiresAt", "<", now);
  if (opts.skip?.length) q = q.where("id", "not in", opts.skip); // approvals whose failed expiry waits for its retry
  return q
    .orderBy("expiresAt")
    .limit(opts.limit ?? 50)
    .execute();
}
