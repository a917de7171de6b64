import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createOperationFactory } from "@/lib/actions/core";
import { verifyStaffCredentials } from "@/lib/auth/credentials";
import { demoMailbox } from "@/lib/mail/mailbox";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { INVITE_TTL_HOURS } from "@/lib/auth/invitations";
import { acceptInvite, inviteByToken, inviteStaff, listStaff, resendInvite, setStaffActive, updateStaff } from "./staff";

let db: TestDatabase;
let acme: string;
const who: Record<string, { staffId: string; tenantId: string }> = {};
const APP = "https://support.example.com";

beforeAll(async () => {
  db = await createTestDatabase();
  acme = (await db.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id;
  for (const s of await db.prisma.staffUser.findMany()) who[s.email.split("@")[0]!] = { staffId: s.id, tenantId: s.tenantId };
});
afterAll(async () => {
  await db?.drop();
});

/** The invitation link in the newest mail to `email`, as the demo mailbox shows it to an admin. */
async function linkFor(email: string): Promise<string> {
  const { mails } = await demoMailbox(db.prisma, acme, 50, { role: "admin" });
  const mail = mails.find((m) => m.to === email);
  const token = mail?.text.match(/\/console\/invite\/([A-Za-z0-9_-]+)/)?.[1];
  if (!token) throw new Error(`no invitation mail to ${email}`);
  return token;
}

describe("inviting a person", () => {
  it("creates them without a password, mails a link that works once, and audits it", async () => {
    const member = await inviteStaff(
      db.prisma,
      who.ada!,
      { name: "Nia", email: " Nia@Acme.test ", role: "reviewer", authorityLimitCents: 20000 },
      { appUrl: APP },
    );
    expect(member).toMatchObject({ name: "Nia", email: "nia@acme.test", role: "reviewer", authorityLimitCents: 20000, status: "invited" });
    // No mail server: the mail is the demo mailbox's, and the admin is told so.
    expect(member.inviteMail).toEqual({ status: "demo", error: null });
    expect(await verifyStaffCredentials(db.prisma, "nia@acme.test", "")).toBeNull();
    const mail = (await demoMailbox(db.prisma, acme, 50, { role: "admin" })).mails.find((m) => m.to === "nia@acme.test")!;
    expect(mail.subject).toBe("You're invited to Acme Outfitters's support console");
    expect(mail.text).toContain(`${APP}/console/invite/`);
    // A reviewer reading the demo mailbox must not be able to take the account.
    expect((await demoMailbox(db.prisma, acme, 50, { role: "reviewer" })).mails.some((m) => m.to === "nia@acme.test")).toBe(false);

    const token = await linkFor("nia@acme.test");
    expect(await inviteByToken(db.prisma, token)).toMatchObject({ state: "valid", name: "Nia", shop: "Acme Outfitters" });
    await expect(acceptInvite(db.prisma, token, "short")).rejects.toMatchObject({ code: "INVALID_INPUT" });
    expect(await acceptInvite(db.prisma, token, "a long enough password")).toEqual({ email: "nia@acme.test" });
    expect(await verifyStaffCredentials(db.prisma, "nia@acme.test", "a long enough password")).toMatchObject({ role: "reviewer" });
    // Single use: the same link cannot set the password again.
    await expect(acceptInvite(db.prisma, token, "another long password")).rejects.toMatchObject({ code: "CONFLICT" });
    expect(await inviteByToken(db.prisma, token)).toEqual({ state: "used" });
    expect(await verifyStaffCredentials(db.prisma, "nia@acme.test", "another long password")).toBeNull();

    const actions = await db.prisma.auditEvent.findMany({ where: { subject: `staff:${member.id}` }, orderBy: { createdAt: "asc" } });
    expect(actions.map((a) => [a.action, a.actor])).toEqual([
      ["staff.invited", "ada@acme.test"],
      ["staff.invite_accepted", "nia@acme.test"],
    ]);
  });

  it("expires the link; a new one replaces the old", async () => {
    const invitedAt = new Date("2026-11-01T10:00:00Z");
    await inviteStaff(
      db.prisma,
      who.ada!,
      { name: "Omar", email: "omar@acme.test", role: "supervisor", authorityLimitCents: null },
      {
        appUrl: APP,
        now: invitedAt,
      },
    );
    const first = await linkFor("omar@acme.test");
    const late = new Date(invitedAt.getTime() + (INVITE_TTL_HOURS * 3600 + 1) * 1000);
    expect(await inviteByToken(db.prisma, first, late)).toEqual({ state: "expired" });
    await expect(acceptInvite(db.prisma, first, "a long enough password", late)).rejects.toMatchObject({ code: "EXPIRED" });

    await resendInvite(db.prisma, who.ada!, (await listStaff(db.prisma, who.ada!)).find((m) => m.email === "omar@acme.test")!.id, {
      appUrl: APP,
    });
    const second = await linkFor("omar@acme.test");
    expect(second).not.toBe(first);
    expect(await inviteByToken(db.prisma, first)).toEqual({ state: "expired" });
    expect(await acceptInvite(db.prisma, second, "a long enough password")).toEqual({ email: "omar@acme.test" });
  });

  it("refuses an email already in use, bad input, a made-up link, and non-admins", async () => {
    const invite = (actor: { staffId: string; tenantId: string }, input: Record<string, unknown>) =>
      inviteStaff(
        db.prisma,
        actor,
        { name: "X", email: "x@acme.test", role: "reviewer", authorityLimitCents: null, ...input },
        { appUrl: APP },
      );
    await expect(invite(who.ada!, { email: "raj@acme.test" })).rejects.toMatchObject({ code: "CONFLICT" });
    await expect(invite(who.ada!, { email: "not-an-email" })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      details: { fields: { email: expect.stringMatching(/email address/) } },
    });
    await expect(invite(who.ada!, { role: "owner" })).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await expect(invite(who.raj!, {})).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(invite(who.sol!, {})).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(await db.prisma.staffUser.count({ where: { email: "x@acme.test" } })).toBe(0);
    await expect(acceptInvite(db.prisma, "A".repeat(43), "a long enough password")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("roles, authority and deactivation", () => {
  it("changes a role and an authority, audited with before and after", async () => {
    const rita = await updateStaff(db.prisma, who.ada!, { staffId: who.rita!.staffId, role: "supervisor", authorityLimitCents: 50000 });
    expect(rita).toMatchObject({ role: "supervisor", authorityLimitCents: 50000 });
    const audit = await db.prisma.auditEvent.findFirstOrThrow({
      where: { action: "staff.updated", subject: `staff:${who.rita!.staffId}` },
    });
    expect(audit.data).toMatchObject({
      before: { role: "reviewer", authorityLimitCents: 30000 },
      after: { role: "supervisor", authorityLimitCents: 50000 },
      changes: ["role: reviewer → supervisor", "approves up to $300.00 → up to $500.00"],
    });
    await updateStaff(db.prisma, who.ada!, { staffId: who.rita!.staffId, role: "reviewer", authorityLimitCents: 30000 });
    await expect(
      updateStaff(db.prisma, who.raj!, { staffId: who.raj!.staffId, role: "admin", authorityLimitCents: null }),
    ).rejects.toMatchObject({
      code: "FORBIDDEN",
    });
  });

  it("a deactivated person cannot sign in, and their session's next action is refused", async () => {
    const op = createOperationFactory({ getClaims: async () => who.raj!, getDb: async () => db.prisma, logError: () => undefined })(
      { name: "t", input: z.object({}) },
      async () => "ran",
    );
    expect(await op({})).toEqual({ ok: true, data: "ran" });
    expect(await verifyStaffCredentials(db.prisma, "raj@acme.test", "demo-password")).not.toBeNull();
    const handoff = await db.prisma.handoff.create({
      data: {
        tenantId: acme,
        conversationId: (await db.prisma.conversation.create({ data: { tenantId: acme, tokenHash: "deactivation-test" } })).id,
        kind: "ESCALATION",
        payload: {},
        claimedById: who.raj!.staffId,
        claimExpiresAt: new Date(Date.now() + 60_000),
      },
    });

    const raj = await setStaffActive(db.prisma, who.ada!, { staffId: who.raj!.staffId, active: false });
    expect(raj.status).toBe("deactivated");
    expect(await verifyStaffCredentials(db.prisma, "raj@acme.test", "demo-password")).toBeNull();
    expect(await op({})).toMatchObject({ ok: false, error: { code: "UNAUTHENTICATED" } });
    expect((await db.prisma.handoff.findUniqueOrThrow({ where: { id: handoff.id } })).claimedById).toBeNull();

    await setStaffActive(db.prisma, who.ada!, { staffId: who.raj!.staffId, active: true });
    expect(await verifyStaffCredentials(db.prisma, "raj@acme.test", "demo-password")).not.toBeNull();
    expect(await op({})).toEqual({ ok: true, data: "ran" });
    const trail = await db.prisma.auditEvent.findMany({ where: { subject: `staff:${who.raj!.staffId}` }, orderBy: { createdAt: "asc" } });
    expect(trail.map((a) => a.action)).toEqual(["staff.deactivated", "staff.reactivated"]);
  });

  it("keeps the last active admin: not demoted, not deactivated, and nobody deactivates themselves", async () => {
    await expect(
      updateStaff(db.prisma, who.ada!, { staffId: who.ada!.staffId, role: "supervisor", authorityLimitCents: null }),
    ).rejects.toMatchObject({
      code: "CONFLICT",
      userMessage: expect.stringMatching(/last active admin/),
    });
    await expect(setStaffActive(db.prisma, who.ada!, { staffId: who.ada!.staffId, active: false })).rejects.toMatchObject({
      code: "CONFLICT",
    });

    // With a second admin, Ada may step down — but then Sol is the last one.
    await updateStaff(db.prisma, who.ada!, { staffId: who.sol!.staffId, role: "admin", authorityLimitCents: null });
    await updateStaff(db.prisma, who.ada!, { staffId: who.ada!.staffId, role: "supervisor", authorityLimitCents: null });
    await expect(
      updateStaff(db.prisma, who.sol!, { staffId: who.sol!.staffId, role: "reviewer", authorityLimitCents: null }),
    ).rejects.toMatchObject({
      code: "CONFLICT",
    });
    // Two admins demoting each other at the same moment: one wins, the shop keeps an admin.
    await updateStaff(db.prisma, who.sol!, { staffId: who.ada!.staffId, role: "admin", authorityLimitCents: null });
    const results = await Promise.allSettled([
      updateStaff(db.prisma, who.ada!, { staffId: who.sol!.staffId, role: "supervisor", authorityLimitCents: null }),
      updateStaff(db.prisma, who.sol!, { staffId: who.ada!.staffId, role: "supervisor", authorityLimitCents: null }),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    expect(await db.prisma.staffUser.count({ where: { tenantId: acme, role: "admin", deactivatedAt: null } })).toBe(1);
  });
});
