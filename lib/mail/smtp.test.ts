import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { SMTPServer } from "smtp-server";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { requestVerificationCode, verifyIdentity } from "@/lib/identity/verification";
import { demoMailbox } from "./mailbox";
import { mailSettings } from "./config";
import { STRANDED_AFTER_MS, sendStrandedMail } from "./send";
import { runAfterCommitOnce } from "@/lib/runtime/after-commit";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { savedEnv } from "@/test/saved-env";
import { inviteStaff, listStaff, resendInvite } from "@/lib/settings/staff";

// Mail over SMTP for real: a local SMTP server (the `smtp-server` package) on 127.0.0.1 receives what the
// product sends, with authentication, exactly as a mail provider would.
interface Received {
  from: string;
  to: string[];
  raw: string;
}

let tdb: TestDatabase;
let acmeId: string;
let server: SMTPServer;
let port: number;
const received: Received[] = [];
const refuse = new Set<string>();
const mailEnv = savedEnv("SMTP_URL", "MAIL_FROM");

beforeAll(async () => {
  tdb = await createTestDatabase();
  acmeId = (await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id;
  server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true, // plain TCP on localhost only
    onAuth(auth, _session, callback) {
      if (auth.username === "mailer" && auth.password === "s3cret") callback(null, { user: auth.username });
      else callback(new Error("Invalid username or password"));
    },
    onRcptTo(address, _session, callback) {
      if (refuse.has(address.address)) callback(new Error(`550 mailbox unavailable: ${address.address}`));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await tdb.drop();
});

beforeEach(async () => {
  process.env.SMTP_URL = `smtp://mailer:s3cret@127.0.0.1:${port}`;
  process.env.MAIL_FROM = "Acme Support <support@acme.test>";
  received.length = 0;
  refuse.clear();
  await tdb.prisma.verificationAttempt.deleteMany();
});

afterEach(() => {
  mailEnv.restore();
});

async function conversation() {
  return tdb.prisma.conversation.create({ data: { tenantId: acmeId, tokenHash: randomBytes(16).toString("hex") } });
}

let n = 0;
const ctx = (conversationId: string) => ({ db: tdb.prisma, tenantId: acmeId, conversationId, toolCallId: `smtp_call_${++n}` });

/** The text part as sent (quoted-printable soft breaks undone). */
const bodyOf = (raw: string) => raw.replace(/=\r?\n/g, "");

describe("mail over SMTP", () => {
  it("delivers the code to the account's address; the outbox keeps the delivery, not the code", async () => {
    const c = await conversation();
    const answer = await requestVerificationCode(ctx(c.id), { email: "Dana@Example.com" });
    expect(answer).toMatchObject({ status: "code_requested" });
    expect(received).toHaveLength(1);
    const mail = received[0]!;
    expect(mail.from).toBe("support@acme.test");
    expect(mail.to).toEqual(["dana@example.com"]);
    expect(mail.raw).toMatch(/^Subject: Your Acme Outfitters verification code/m);
    const code = bodyOf(mail.raw).match(/support is (\d{6})\./)![1]!;

    const row = await tdb.prisma.mailOutbox.findFirstOrThrow({ where: { tenantId: acmeId, to: "dana@example.com" } });
    expect(row).toMatchObject({ status: "sent", text: "", error: null });
    expect(row.messageId).toBeTruthy();
    expect(row.sentAt).toBeInstanceOf(Date);
    // Not in the demo mailbox: it went out for real.
    const mailbox = await demoMailbox(tdb.prisma, acmeId);
    expect(mailbox.smtp).toBe(true);
    expect(mailbox.mails.find((m) => m.id === row.id)).toBeUndefined();

    expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com", code })).toMatchObject({ status: "verified", level: "email_code" });
  });

  it("sends nothing for an email without an account, and answers the same", async () => {
    const c = await conversation();
    const known = await requestVerificationCode(ctx(c.id), { email: "sam@example.com" });
    const unknown = await requestVerificationCode(ctx(c.id), { email: "nobody@example.com" });
    expect(unknown).toEqual(known);
    expect(received.map((r) => r.to)).toEqual([["sam@example.com"]]);
  });

  it("records a refused delivery on the outbox row; the customer's answer does not change", async () => {
    refuse.add("dana@example.com");
    const c = await conversation();
    const answer = await requestVerificationCode(ctx(c.id), { email: "dana@example.com" });
    expect(answer).toMatchObject({ status: "code_requested" });
    expect(received).toHaveLength(0);
    const row = await tdb.prisma.mailOutbox.findFirstOrThrow({
      where: { tenantId: acmeId, to: "dana@example.com" },
      orderBy: { createdAt: "desc" },
    });
    expect(row.status).toBe("failed");
    expect(row.error).toMatch(/mailbox unavailable/);
  });

  it("an invitation whose mail the server refuses says so to the admin, and in the staff list, until a new link goes out", async () => {
    const ada = await tdb.prisma.staffUser.findUniqueOrThrow({ where: { email: "ada@acme.test" } });
    const admin = { tenantId: acmeId, staffId: ada.id };
    refuse.add("noor@acme.test");
    const invited = await inviteStaff(
      tdb.prisma,
      admin,
      { name: "Noor", email: "noor@acme.test", role: "reviewer", authorityLimitCents: null },
      { appUrl: "https://support.example.com" },
    );
    // The person is invited (the link stands), and the admin is told the mail did not go, with the server's answer.
    expect(invited).toMatchObject({
      status: "invited",
      inviteMail: { status: "failed", error: expect.stringMatching(/mailbox unavailable/) },
    });
    expect(received).toHaveLength(0);
    const listed = (await listStaff(tdb.prisma, admin)).find((m) => m.email === "noor@acme.test");
    expect(listed?.inviteMail).toEqual(invited.inviteMail);
    // Mail works again: a new link goes out, and the list says so.
    refuse.clear();
    const resent = await resendInvite(tdb.prisma, admin, invited.id, { appUrl: "https://support.example.com" });
    expect(resent.inviteMail).toEqual({ status: "sent", error: null });
    expect(received.map((r) => r.to)).toEqual([["noor@acme.test"]]);
    expect((await listStaff(tdb.prisma, admin)).find((m) => m.email === "noor@acme.test")?.inviteMail).toEqual({
      status: "sent",
      error: null,
    });
    // People who set their password have no invitation mail to show.
    expect((await listStaff(tdb.prisma, admin)).find((m) => m.email === "ada@acme.test")?.inviteMail).toBeNull();
  });

  it("refuses to run half configured, before writing anything", async () => {
    delete process.env.MAIL_FROM;
    expect(() => mailSettings()).toThrow(/MAIL_FROM is missing/);
    const c = await conversation();
    const before = await tdb.prisma.verificationCode.count();
    await expect(requestVerificationCode(ctx(c.id), { email: "dana@example.com" })).rejects.toThrow(/half configured/);
    expect(await tdb.prisma.verificationCode.count()).toBe(before);
    expect(received).toHaveLength(0);
  });

  it("rejects wrong SMTP credentials as a failed delivery", async () => {
    process.env.SMTP_URL = `smtp://mailer:wrong@127.0.0.1:${port}`;
    const c = await conversation();
    await requestVerificationCode(ctx(c.id), { email: "sam@example.com" });
    const row = await tdb.prisma.mailOutbox.findFirstOrThrow({
      where: { tenantId: acmeId, to: "sam@example.com" },
      orderBy: { createdAt: "desc" },
    });
    expect(row.status).toBe("failed");
    expect(row.error).toMatch(/Invalid username or password|auth/i);
    expect(received).toHaveLength(0);
  });
});

// A process can stop between the commit that queued a mail and its send (a crash, a deploy): the mail stays queued.
describe("mail a stopped process left queued", () => {
  /**
   * A queued mail as a process leaves it when it stops right after its commit, `ageMs` ago: a code's, or a staff
   * invitation's (admin-only: it carries a link to set a password).
   */
  async function stranded(to: string, ageMs: number, kind: "code" | "invitation" = "code") {
    const [subject, text] =
      kind === "code"
        ? ["Your Acme Outfitters verification code", "Your code for Acme Outfitters support is 123456."]
        : ["You are invited to the Acme Outfitters support console", "Set your password here: https://support.example/console/invite/abc"];
    return tdb.prisma.mailOutbox.create({
      data: {
        tenantId: acmeId,
        to,
        subject,
        text,
        status: "queued",
        adminOnly: kind === "invitation",
        createdAt: new Date(Date.now() - ageMs),
      },
    });
  }
  const sweepAsWorkers = () => sendStrandedMail(tdb.prisma, { lapseAfterMs: 10 * 60_000, invitationLapseAfterMs: 72 * 3_600_000 });

  it("is sent once by a worker's after-commit pass, however many workers sweep at once; a younger one is left to its sender", async () => {
    const left = await stranded("dana@example.com", STRANDED_AFTER_MS + 5_000);
    const young = await stranded("sam@example.com", 5_000); // its process may be sending it right now
    const pass = await runAfterCommitOnce({ db: tdb.prisma, workerId: "sweeper-0" } as unknown as RuntimeDeps);
    const others = await Promise.all(
      [1, 2, 3].map(() => sendStrandedMail(tdb.prisma, { lapseAfterMs: 10 * 60_000 })), // three more workers at once
    );
    expect(pass.strandedMail).toBe(1);
    expect(others.map((o) => o.sent)).toEqual([0, 0, 0]);
    expect(received.map((r) => r.to)).toEqual([["dana@example.com"]]);
    expect(bodyOf(received[0]!.raw)).toMatch(/123456/);
    expect(await tdb.prisma.mailOutbox.findUniqueOrThrow({ where: { id: left.id } })).toMatchObject({ status: "sent", text: "" });
    expect(await tdb.prisma.mailOutbox.findUniqueOrThrow({ where: { id: young.id } })).toMatchObject({ status: "queued" });
    await tdb.prisma.mailOutbox.delete({ where: { id: young.id } });
  });

  it("a backlog past one sweep's limit is sent by the passes that follow, not 20 every 30 s", async () => {
    const left = await Promise.all(Array.from({ length: 25 }, (_, i) => stranded(`backlog-${i}@example.com`, STRANDED_AFTER_MS + 5_000)));
    const deps = { db: tdb.prisma, workerId: "sweeper-backlog" } as unknown as RuntimeDeps;
    const passes = [];
    for (let i = 0; i < 3; i++) passes.push((await runAfterCommitOnce(deps)).strandedMail);
    // 20 (the limit: there may be more), the 5 left at once, then nothing until the usual interval.
    expect(passes).toEqual([20, 5, 0]);
    expect(received).toHaveLength(25);
    const rows = await tdb.prisma.mailOutbox.findMany({ where: { id: { in: left.map((m) => m.id) } } });
    expect(rows.every((r) => r.status === "sent")).toBe(true);
  });

  it("past what it carries is never sent: recorded failed, the code emptied", async () => {
    const old = await stranded("dana@example.com", 11 * 60_000);
    expect(await sendStrandedMail(tdb.prisma, { lapseAfterMs: 10 * 60_000 })).toEqual({ sent: 0, lapsed: 1, more: false });
    expect(received).toHaveLength(0);
    const row = await tdb.prisma.mailOutbox.findUniqueOrThrow({ where: { id: old.id } });
    expect(row).toMatchObject({ status: "failed", text: "" });
    expect(row.error).toMatch(/lapsed/);
  });

  it("a staff invitation lapses with its link (72 hours), not with a code's 10 minutes: one an hour old is sent", async () => {
    const hourOld = await stranded("theo@acme.test", 60 * 60_000, "invitation");
    const lapsed = await stranded("una@acme.test", 73 * 3_600_000, "invitation");
    // A worker's pass (its sweep given both lives), then another worker's sweep: nothing is left for it.
    const pass = await runAfterCommitOnce({ db: tdb.prisma, workerId: "sweeper-invitations" } as unknown as RuntimeDeps);
    expect(pass.strandedMail).toBe(2); // one sent, one lapsed
    expect(await sweepAsWorkers()).toEqual({ sent: 0, lapsed: 0, more: false });
    expect(received.map((r) => r.to)).toEqual([["theo@acme.test"]]);
    expect(await tdb.prisma.mailOutbox.findUniqueOrThrow({ where: { id: hourOld.id } })).toMatchObject({ status: "sent" });
    expect(await tdb.prisma.mailOutbox.findUniqueOrThrow({ where: { id: lapsed.id } })).toMatchObject({ status: "failed", text: "" });
  });

  it("one another worker holds (sending it now) is passed by, never waited for", async () => {
    const held = await stranded("dana@example.com", 11 * 60_000);
    const other = new pg.Client({ connectionString: tdb.url });
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query(`SELECT id FROM "MailOutbox" WHERE id = $1 FOR UPDATE`, [held.id]);
      const swept = await Promise.race([
        sendStrandedMail(tdb.prisma, { lapseAfterMs: 10 * 60_000 }),
        new Promise((r) => setTimeout(() => r("waited for the other worker"), 5_000)),
      ]);
      expect(swept).toEqual({ sent: 0, lapsed: 0, more: false });
    } finally {
      await other.query("ROLLBACK");
      await other.end();
    }
    expect(await sendStrandedMail(tdb.prisma, { lapseAfterMs: 10 * 60_000 })).toEqual({ sent: 0, lapsed: 1, more: false });
  });

  it("refused by the mail server: recorded failed, not tried again", async () => {
    refuse.add("dana@example.com");
    const left = await stranded("dana@example.com", STRANDED_AFTER_MS + 5_000);
    expect(await sendStrandedMail(tdb.prisma, { lapseAfterMs: 10 * 60_000 })).toEqual({ sent: 1, lapsed: 0, more: false });
    expect(await tdb.prisma.mailOutbox.findUniqueOrThrow({ where: { id: left.id } })).toMatchObject({ status: "failed" });
    expect(await sendStrandedMail(tdb.prisma, { lapseAfterMs: 10 * 60_000 })).toEqual({ sent: 0, lapsed: 0, more: false });
  });

  it("without SMTP there is nothing to send: the demo mailbox is the delivery", async () => {
    delete process.env.SMTP_URL;
    delete process.env.MAIL_FROM;
    const left = await stranded("dana@example.com", STRANDED_AFTER_MS + 5_000);
    expect(await sendStrandedMail(tdb.prisma, { lapseAfterMs: 10 * 60_000 })).toEqual({ sent: 0, lapsed: 0, more: false });
    await tdb.prisma.mailOutbox.delete({ where: { id: left.id } });
  });
});
