// The shop's staff in settings: invite a person (a mailed link to set their password: single use, expiring), change
// a role or an approval authority, deactivate and reactivate. Each change is written with its audit record. The
// shop always keeps one active admin: the last one cannot be demoted or deactivated (checked under a lock on the
// shop's admin rows, so two admins cannot demote each other at the same moment).
import { createHash, randomBytes, randomUUID } from "node:crypto";
import bcrypt from "bcryptjs";
import { sql, type Transaction } from "kysely";
import { z } from "zod";
import { INVITE_TTL_HOURS } from "@/lib/auth/invitations";
import { type DB, storeOf } from "@/lib/db/kysely";
import type { MailStatus } from "@/lib/generated/kysely/enums";
import { AppError } from "@/lib/errors";
import { withdrawApprovals } from "@/lib/store/handoffs";
import { releaseConversationsOf } from "@/lib/conversations/takeover";
import { log } from "@/lib/log";
import { formatCents } from "@/lib/money";
import { deliverMail, type QueuedMail, queueMail } from "@/lib/mail/send";
import { addAudit } from "@/lib/store/audit";
import { Statement } from "@/lib/store/statement";
import { requireAdmin, type SettingsActor } from "./admin";

export const STAFF_ROLES = ["reviewer", "supervisor", "admin"] as const;
export type StaffRole = (typeof STAFF_ROLES)[number];
export const PASSWORD_MIN_LENGTH = 10;
const BCRYPT_COST = 10; // as the demo seed hashes

const authority = z.number().int().nonnegative().max(100_000_000, "At most $1,000,000.00.").nullable().describe("cents; null = any amount");

export const inviteInputSchema = z.object({
  name: z.string().trim().min(1, "Write the person's name.").max(100),
  email: z
    .string()
    .trim()
    .toLowerCase()
    .max(320)
    .regex(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, "Write an email address, e.g. sam@shop.example."),
  role: z.enum(STAFF_ROLES),
  authorityLimitCents: authority,
});
export type InviteInput = z.infer<typeof inviteInputSchema>;

export const staffChangeSchema = z.object({
  staffId: z.string().trim().min(1).max(64),
  role: z.enum(STAFF_ROLES),
  authorityLimitCents: authority,
});

export const passwordSchema = z
  .string()
  .min(PASSWORD_MIN_LENGTH, `Use at least ${PASSWORD_MIN_LENGTH} characters.`)
  .max(200, "Use at most 200 characters.");

export type StaffStatus = "active" | "invited" | "deactivated";

export interface StaffMember {
  id: string;
  name: string;
  email: string;
  role: StaffRole;
  authorityLimitCents: number | null;
  status: StaffStatus;
  createdAt: Date;
  deactivatedAt: Date | null;
  /** invited only: when the newest link stops working */
  inviteExpiresAt: Date | null;
  /**
   * invited only: the newest invitation mail to them — sent, failed (with the mail server's answer), queued (being
   * sent), or demo (no mail server: the link is in the demo mailbox). A failed one is resent with a new link.
   */
  inviteMail: InviteMail | null;
}

export interface InviteMail {
  status: MailStatus;
  error: string | null;
}

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

function statusOf(row: { passwordHash: string | null; deactivatedAt: Date | null }): StaffStatus {
  if (row.deactivatedAt) return "deactivated";
  return row.passwordHash ? "active" : "invited";
}

/** The shop's staff, active first, then by name. Admins only. */
export async function listStaff(client: object, actor: SettingsActor): Promise<StaffMember[]> {
  await requireAdmin(storeOf(client), actor);
  return members(client, actor.tenantId);
}

/** One person as the list shows them (after a change the caller made — they may no longer be an admin). */
async function member(client: object, tenantId: string, staffId: string): Promise<StaffMember> {
  const [one] = await members(client, tenantId, staffId);
  if (!one) throw new AppError("NOT_FOUND", "This person was not found.");
  return one;
}

async function members(client: object, tenantId: string, staffId?: string): Promise<StaffMember[]> {
  let q = storeOf(client)
    .selectFrom("StaffUser as s")
    .select([
      "s.id",
      "s.name",
      "s.email",
      "s.role",
      "s.authorityLimitCents",
      "s.passwordHash",
      "s.deactivatedAt",
      "s.createdAt",
      (eb) =>
        eb
          .selectFrom("StaffInvite as i")
          .select((e) => e.fn.max("i.expiresAt").as("x"))
          .whereRef("i.staffId", "=", "s.id")
          .where("i.usedAt", "is", null)
          .as("inviteExpiresAt"),
      // The newest invitation mail to them (MailOutbox_tenantId_to_createdAt_idx): only invitations are admin-only.
      sql<InviteMail | null>`(SELECT json_build_object('status', m.status, 'error', m.error) FROM "MailOutbox" m
        WHERE m."tenantId" = s."tenantId" AND m."to" = s.email AND m."adminOnly" ORDER BY m."createdAt" DESC LIMIT 1)`.as("inviteMail"),
    ])
    .where("s.tenantId", "=", tenantId)
    .orderBy("s.name");
  if (staffId) q = q.where("s.id", "=", staffId);
  const rows = await q.execute();
  const order: Record<StaffStatus, number> = { active: 0, invited: 1, deactivated: 2 };
  return rows
    .map((r) => ({
      id: r.id,
      name: r.name,
      email: r.email,
      role: r.role,
      authorityLimitCents: r.authorityLimitCents,
      status: statusOf(r),
      createdAt: r.createdAt,
      deactivatedAt: r.deactivatedAt,
      inviteExpiresAt: r.passwordHash || r.deactivatedAt ? null : ((r.inviteExpiresAt as Date | null) ?? null),
      inviteMail: statusOf(r) === "invited" ? r.inviteMail : null,
    }))
    .sort((a, b) => order[a.status] - order[b.status]);
}

/** Adds a new invitation link for `staffId` (older unused ones stop working) and its mail, to a statement. */
async function issueInvite(
  tx: Transaction<DB>,
  s: Statement,
  a: { tenantId: string; tenantName: string; staffId: string; name: string; email: string; by: { id: string; name: string } },
  appUrl: string,
  now: Date,
): Promise<QueuedMail> {
  const token = randomBytes(32).toString("base64url");
  const expiresAt = new Date(now.getTime() + INVITE_TTL_HOURS * 3_600_000);
  s.update(
    "revoked",
    "StaffInvite",
    { expiresAt: now },
    sql<boolean>`"StaffInvite"."staffId" = ${a.staffId} AND "StaffInvite"."usedAt" IS NULL AND "StaffInvite"."expiresAt" > ${now}`,
  );
  s.insert("invite", "StaffInvite", {
    id: randomUUID(),
    tenantId: a.tenantId,
    staffId: a.staffId,
    tokenHash: hashToken(token),
    expiresAt,
    createdById: a.by.id,
  });
  const link = `${appUrl.replace(/\/+$/, "")}/console/invite/${token}`;
  return queueMail(tx, a.tenantId, {
    to: a.email,
    subject: `You're invited to ${a.tenantName}'s support console`,
    text: [
      `Hello ${a.name},`,
      "",
      `${a.by.name} invited you to work in ${a.tenantName}'s support console.`,
      `Set your password here (the link works once, for ${INVITE_TTL_HOURS} hours):`,
      "",
      link,
      "",
      "If you did not expect this, ignore this mail: nothing happens without the link.",
    ].join("\n"),
    adminOnly: true,
  });
}

async function sendAfterCommit(client: object, mail: QueuedMail): Promise<void> {
  // Over SMTP only; a failed delivery is recorded on the outbox row (and logged), the invitation stands, and the
  // admin reads the outcome in the member the call returns (`inviteMail`).
  await deliverMail(client, mail).catch((err) => log.error({ err }, "invitation mail delivery failed"));
}

/**
 * Invites a person: their staff row (no password yet, so they cannot sign in), a link to set the password mailed
 * to them, and a `staff.invited` audit record. An email already in use → CONFLICT. Admins only.
 */
export async function inviteStaff(
  client: object,
  actor: SettingsActor,
  raw: unknown,
  opts: { appUrl: string; now?: Date },
): Promise<StaffMember> {
  const parsed = inviteInputSchema.safeParse(raw);
  if (!parsed.success) throw invalid(parsed.error);
  const input = parsed.data;
  const now = opts.now ?? new Date();
  const db = storeOf(client);
  const { staffId, mail } = await db.transaction().execute(async (tx) => {
    const admin = await requireAdmin(tx, actor);
    const tenant = await tx.selectFrom("Tenant").select("name").where("id", "=", actor.tenantId).executeTakeFirstOrThrow();
    const taken = await tx.selectFrom("StaffUser").select("id").where("email", "=", input.email).executeTakeFirst();
    if (taken) throw new AppError("CONFLICT", `${input.email} already has an account.`, { field: "email" });
    const staffId = randomUUID();
    const s = Statement.plain();
    s.insert("staff", "StaffUser", {
      id: staffId,
      tenantId: actor.tenantId,
      email: input.email,
      name: input.name,
      passwordHash: null,
      role: sql`${input.role}::"StaffRole"`,
      authorityLimitCents: input.authorityLimitCents,
    });
    addAudit(s, "audit", {
      tenantId: actor.tenantId,
      actor: admin.email,
      action: "staff.invited",
      subject: `staff:${staffId}`,
      data: { email: input.email, name: input.name, role: input.role, authorityLimitCents: input.authorityLimitCents },
    });
    // The invite row references the staff row: insert it first, then the invitation.
    await s.run(tx);
    const invite = Statement.plain();
    const mail = await issueInvite(
      tx,
      invite,
      { tenantId: actor.tenantId, tenantName: tenant.name, staffId, name: input.name, email: input.email, by: admin },
      opts.appUrl,
      now,
    );
    await invite.run(tx);
    return { staffId, mail };
  });
  await sendAfterCommit(client, mail);
  return member(client, actor.tenantId, staffId);
}

/**
 * Mails a new link to someone invited who has not set a password yet (the old link stops working). Returns them as
 * the list shows them, with how the mail went.
 */
export async function resendInvite(
  client: object,
  actor: SettingsActor,
  staffId: string,
  opts: { appUrl: string; now?: Date },
): Promise<StaffMember> {
  const now = opts.now ?? new Date();
  const db = storeOf(client);
  const mail = await db.transaction().execute(async (tx) => {
    const admin = await requireAdmin(tx, actor);
    const person = await lockStaff(tx, actor.tenantId, staffId);
    if (person.deactivatedAt) throw new AppError("CONFLICT", `${person.name} is deactivated. Reactivate them first.`);
    if (person.passwordHash) throw new AppError("CONFLICT", `${person.name} has already set a password.`);
    const tenant = await tx.selectFrom("Tenant").select("name").where("id", "=", actor.tenantId).executeTakeFirstOrThrow();
    const s = Statement.plain();
    const queued = await issueInvite(
      tx,
      s,
      { tenantId: actor.tenantId, tenantName: tenant.name, staffId, name: person.name, email: person.email, by: admin },
      opts.appUrl,
      now,
    );
    addAudit(s, "audit", {
      tenantId: actor.tenantId,
      actor: admin.email,
      action: "staff.invite_resent",
      subject: `staff:${staffId}`,
      data: { email: person.email },
    });
    await s.run(tx);
    return queued;
  });
  await sendAfterCommit(client, mail);
  return member(client, actor.tenantId, staffId);
}

export type InviteState =
  | { state: "valid"; name: string; email: string; shop: string; expiresAt: Date }
  | { state: "used" | "expired" | "invalid" };

/** What an invitation link is, for its page (nothing about the person unless the link is valid). */
export async function inviteByToken(client: object, token: string, now = new Date()): Promise<InviteState> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(token)) return { state: "invalid" };
  const row = await storeOf(client)
    .selectFrom("StaffInvite as i")
    .innerJoin("StaffUser as s", "s.id", "i.staffId")
    .innerJoin("Tenant as t", "t.id", "i.tenantId")
    .select(["i.expiresAt", "i.usedAt", "s.name", "s.email", "s.deactivatedAt", "s.passwordHash", "t.name as shop"])
    .where("i.tokenHash", "=", hashToken(token))
    .executeTakeFirst();
  if (!row || row.deactivatedAt) return { state: "invalid" };
  if (row.usedAt || row.passwordHash) return { state: "used" };
  if (row.expiresAt <= now) return { state: "expired" };
  return { state: "valid", name: row.name, email: row.email, shop: row.shop, expiresAt: row.expiresAt };
}

/**
 * Sets the invited person's password from the link: once (the link is spent in the same transaction), before it
 * expires, only while the person is not deactivated. Returns their email (to sign in with).
 */
export async function acceptInvite(client: object, token: string, password: unknown, now = new Date()): Promise<{ email: string }> {
  const pw = passwordSchema.safeParse(password);
  if (!pw.success) throw new AppError("INVALID_INPUT", pw.error.issues[0]!.message, { field: "password" });
  if (typeof token !== "string" || !/^[A-Za-z0-9_-]{20,100}$/.test(token))
    throw new AppError("NOT_FOUND", "This invitation link is not valid.");
  const passwordHash = await bcrypt.hash(pw.data, BCRYPT_COST);
  return storeOf(client)
    .transaction()
    .execute(async (tx) => {
      const invite = await tx
        .selectFrom("StaffInvite")
        .select(["id", "tenantId", "staffId", "expiresAt", "usedAt"])
        .where("tokenHash", "=", hashToken(token))
        .forUpdate()
        .executeTakeFirst();
      if (!invite) throw new AppError("NOT_FOUND", "This invitation link is not valid.");
      const person = await lockStaff(tx, invite.tenantId, invite.staffId);
      if (invite.usedAt || person.passwordHash)
        throw new AppError("CONFLICT", "This invitation was already used. Sign in with the password you set.");
      if (invite.expiresAt <= now) throw new AppError("EXPIRED", "This invitation expired. Ask an admin of the shop to send a new one.");
      if (person.deactivatedAt) throw new AppError("NOT_FOUND", "This invitation link is not valid.");
      const s = Statement.plain();
      s.update("spent", "StaffInvite", { usedAt: now }, sql<boolean>`"StaffInvite".id = ${invite.id}`);
      s.update("person", "StaffUser", { passwordHash }, sql<boolean>`"StaffUser".id = ${person.id}`);
      addAudit(s, "audit", {
        tenantId: invite.tenantId,
        actor: person.email,
        action: "staff.invite_accepted",
        subject: `staff:${person.id}`,
        data: {},
      });
      await s.run(tx);
      return { email: person.email };
    });
}

interface LockedStaff {
  id: string;
  name: string;
  email: string;
  role: StaffRole;
  authorityLimitCents: number | null;
  passwordHash: string | null;
  deactivatedAt: Date | null;
}

async function lockStaff(tx: Transaction<DB>, tenantId: string, staffId: string): Promise<LockedStaff> {
  const row = await tx
    .selectFrom("StaffUser")
    .select(["id", "name", "email", "role", "authorityLimitCents", "passwordHash", "deactivatedAt"])
    .where("id", "=", staffId)
    .where("tenantId", "=", tenantId)
    .forUpdate()
    .executeTakeFirst();
  if (!row) throw new AppError("NOT_FOUND", "This person was not found.");
  return row;
}

/**
 * Locks the shop's active admins (in a fixed order, so concurrent changes queue instead of deadlocking) and says
 * whether `staffId` is the only one: then it may not stop being an admin.
 */
async function isLastActiveAdmin(tx: Transaction<DB>, tenantId: string, staffId: string): Promise<boolean> {
  const admins = await tx
    .selectFrom("StaffUser")
    .select("id")
    .where("tenantId", "=", tenantId)
    .where("role", "=", "admin")
    .where("deactivatedAt", "is", null)
    .where("passwordHash", "is not", null)
    .orderBy("id")
    .forUpdate()
    .execute();
  return admins.length === 1 && admins[0]!.id === staffId;
}

const describeAuthority = (cents: number | null) => (cents === null ? "any amount" : `up to ${formatCents(cents)}`);

/**
 * Changes a person's role and approval authority (from their next request on: every call re-reads the staff row).
 * The last active admin cannot be demoted (CONFLICT). Admins only.
 */
export async function updateStaff(client: object, actor: SettingsActor, raw: unknown): Promise<StaffMember> {
  const parsed = staffChangeSchema.safeParse(raw);
  if (!parsed.success) throw invalid(parsed.error);
  const input = parsed.data;
  await storeOf(client)
    .transaction()
    .execute(async (tx) => {
      const last = await isLastActiveAdmin(tx, actor.tenantId, input.staffId);
      const admin = await requireAdmin(tx, actor);
      const person = await lockStaff(tx, actor.tenantId, input.staffId);
      if (person.role === input.role && person.authorityLimitCents === input.authorityLimitCents) return;
      if (last && input.role !== "admin")
        throw new AppError("CONFLICT", `${person.name} is the shop's last active admin: make someone else an admin first.`);
      const s = Statement.plain();
      s.update(
        "person",
        "StaffUser",
        { role: sql`${input.role}::"StaffRole"`, authorityLimitCents: input.authorityLimitCents },
        sql<boolean>`"StaffUser".id = ${person.id}`,
      );
      // Approvals they gave of items still waiting whose amount their new authority no longer covers are withdrawn.
      if (
        input.authorityLimitCents !== null &&
        (person.authorityLimitCents === null || input.authorityLimitCents < person.authorityLimitCents)
      ) {
        withdrawApprovals(s, {
          tenantId: actor.tenantId,
          staffId: person.id,
          actor: admin.email,
          why: "authority_lowered",
          aboveCents: input.authorityLimitCents,
        });
      }
      const changes: string[] = [];
      if (person.role !== input.role) changes.push(`role: ${person.role} → ${input.role}`);
      if (person.authorityLimitCents !== input.authorityLimitCents)
        changes.push(`approves ${describeAuthority(person.authorityLimitCents)} → ${describeAuthority(input.authorityLimitCents)}`);
      addAudit(s, "audit", {
        tenantId: actor.tenantId,
        actor: admin.email,
        action: "staff.updated",
        subject: `staff:${person.id}`,
        data: {
          email: person.email,
          before: { role: person.role, authorityLimitCents: person.authorityLimitCents },
          after: { role: input.role, authorityLimitCents: input.authorityLimitCents },
          changes,
        },
      });
      await s.run(tx);
    });
  return member(client, actor.tenantId, input.staffId);
}

/**
 * Deactivates a person (they cannot sign in, and their sessions stop at the next request; their claims on queue
 * items are released, their approvals of items still waiting withdrawn, and the conversations they held go back to
 * the queue) or reactivates them (nothing of that comes back). Nobody deactivates themselves, and the last active
 * admin stays.
 */
export async function setStaffActive(
  client: object,
  actor: SettingsActor,
  input: { staffId: string; active: boolean },
  now = new Date(),
): Promise<StaffMember> {
  await storeOf(client)
    .transaction()
    .execute(async (tx) => {
      const last = await isLastActiveAdmin(tx, actor.tenantId, input.staffId);
      const admin = await requireAdmin(tx, actor);
      const person = await lockStaff(tx, actor.tenantId, input.staffId);
      const s = Statement.plain();
      if (input.active) {
        if (!person.deactivatedAt) return;
        s.update("person", "StaffUser", { deactivatedAt: null }, sql<boolean>`"StaffUser".id = ${person.id}`);
      } else {
        if (person.deactivatedAt) return;
        if (person.id === admin.id) throw new AppError("CONFLICT", "You cannot deactivate yourself. Ask another admin.");
        if (last) throw new AppError("CONFLICT", `${person.name} is the shop's last active admin: make someone else an admin first.`);
        s.update("person", "StaffUser", { deactivatedAt: now }, sql<boolean>`"StaffUser".id = ${person.id}`);
        // Their items go back to the queue at once instead of waiting for the claims to lapse.
        s.update(
          "released",
          "Handoff",
          { claimedById: null, claimExpiresAt: null },
          sql<boolean>`"Handoff"."tenantId" = ${actor.tenantId} AND "Handoff"."claimedById" = ${person.id} AND "Handoff".status = 'PENDING'`,
        );
        // Their approvals of items still waiting for a second approver no longer count: someone who may still
        // approve must give it.
        withdrawApprovals(s, { tenantId: actor.tenantId, staffId: person.id, actor: admin.email, why: "deactivated" });
        // The customers they were talking with wait for another person, in the queue.
        await releaseConversationsOf(tx, { tenantId: actor.tenantId, staff: person, actor: admin.email });
      }
      addAudit(s, "audit", {
        tenantId: actor.tenantId,
        actor: admin.email,
        action: input.active ? "staff.reactivated" : "staff.deactivated",
        subject: `staff:${person.id}`,
        data: { email: person.email, role: person.role },
      });
      await s.run(tx);
    });
  return member(client, actor.tenantId, input.staffId);
}

function invalid(err: z.ZodError): AppError {
  const fields: Record<string, string> = {};
  for (const issue of err.issues) fields[issue.path.join(".") || "input"] ??= issue.message;
  return new AppError("INVALID_INPUT", Object.values(fields).join(" "), { fields });
}
