import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { ATTEMPT_LIMITS } from "./attempts";
import { CODE_TTL_MINUTES, MAX_CODE_ATTEMPTS } from "./codes";
import { emailHash } from "./normalise";
import { requestVerificationCode, verifyIdentity } from "./verification";

// The identity checks on a real database: one answer for every failure, limits that hold, codes that work once.
let tdb: TestDatabase;
let acme: { id: string };
let globex: { id: string };
beforeAll(async () => {
  tdb = await createTestDatabase();
  acme = await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  globex = await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
});
afterAll(async () => {
  await tdb.drop();
});
beforeEach(async () => {
  // Attempts are counted across the shop (per IP, per email): each test starts from none.
  await tdb.prisma.verificationAttempt.deleteMany();
  await tdb.prisma.verificationCode.deleteMany();
  await tdb.prisma.mailOutbox.deleteMany();
});

async function conversation(opts: { ip?: string; tenantId?: string } = {}) {
  return tdb.prisma.conversation.create({
    data: { tenantId: opts.tenantId ?? acme.id, tokenHash: randomBytes(16).toString("hex"), clientIp: opts.ip ?? null },
  });
}

let calls = 0;
function ctx(conversationId: string, extra: { now?: Date; tenantId?: string; toolCallId?: string } = {}) {
  return {
    db: tdb.prisma,
    tenantId: extra.tenantId ?? acme.id,
    conversationId,
    toolCallId: extra.toolCallId ?? `call_${++calls}`,
    now: extra.now,
  };
}

const DANA = { email: "dana@example.com", order_number: "A-1001" };

async function latestDemoMail(to: string) {
  const mail = await tdb.prisma.mailOutbox.findFirstOrThrow({ where: { to, status: "demo" }, orderBy: { createdAt: "desc" } });
  return { ...mail, code: mail.text.match(/\b(\d{6})\b/)![1]! };
}

describe("verify_customer by email and order number", () => {
  it("verifies with the account email and one of its orders, case, spaces and order spelling aside", async () => {
    const c = await conversation();
    const out = await verifyIdentity(ctx(c.id), { email: "  Dana@Example.COM ", order_number: "a1002" });
    expect(out).toMatchObject({
      status: "verified",
      name: "Dana Reyes",
      email: "dana@example.com",
      level: "order_email",
      can_change_address: false,
    });
    const attempt = await tdb.prisma.verificationAttempt.findFirstOrThrow({ where: { conversationId: c.id } });
    expect(attempt).toMatchObject({
      outcome: "verified",
      kind: "order_email",
      level: "order_email",
      emailHash: emailHash("dana@example.com"),
    });
  });

  it("gives one identical answer whatever was wrong: unknown email, wrong order, another customer's order, a name for an email", async () => {
    const c = await conversation();
    const wrong = [
      { email: "nobody@example.com", order_number: "A-1001" }, // no such account
      { email: "dana@example.com", order_number: "A-9999" }, // no such order
      { email: "dana@example.com", order_number: "A-2001" }, // Sam's order
      { email: "Dana Reyes", order_number: "A-1001" }, // a name where the email goes
      { email: "hank@globex.test", order_number: "G-9001" }, // another shop's customer and order
    ];
    const answers = [];
    for (const input of wrong) answers.push(await verifyIdentity(ctx(c.id), input));
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0]).toEqual({ status: "not_verified", message: expect.stringMatching(/^Those details don't match our records/) });
    expect(JSON.stringify(answers[0])).not.toMatch(/dana|Reyes|exist|unknown|order A-/i);
    const conv = await tdb.prisma.conversation.findUniqueOrThrow({ where: { id: c.id } });
    expect(conv.verifiedCustomerId).toBeNull();
  });

  it("an email alone proves nothing and is not counted; there is no way to pass a name", async () => {
    const c = await conversation();
    expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com" })).toMatchObject({ status: "needs_more" });
    expect(await tdb.prisma.verificationAttempt.count()).toBe(0);
  });

  it("adds the postcode level when the postcode of that order's delivery address matches; a wrong one fails like the rest", async () => {
    const c = await conversation();
    expect(await verifyIdentity(ctx(c.id), { ...DANA, postcode: "97204" })).toMatchObject({
      status: "verified",
      level: "order_email_postcode",
      can_change_address: true,
    });
    const wrong = await verifyIdentity(ctx(c.id), { ...DANA, postcode: "97205" });
    expect(wrong).toEqual(await verifyIdentity(ctx(c.id), { email: "dana@example.com", order_number: "A-2001" }));
  });

  it("a re-verification of the same customer never lowers the conversation's level", async () => {
    const c = await conversation();
    await tdb.prisma.conversation.update({
      where: { id: c.id },
      data: {
        verifiedCustomerId: (await tdb.prisma.customer.findFirstOrThrow({ where: { email: "dana@example.com" } })).id,
        verificationLevel: "email_code",
        verificationExpiresAt: new Date(Date.now() + 60_000),
      },
    });
    expect(await verifyIdentity(ctx(c.id), DANA)).toMatchObject({ status: "verified", level: "email_code" });
    expect(await verifyIdentity(ctx(c.id), { email: "sam@example.com", order_number: "A-2001" })).toMatchObject({ level: "order_email" });
  });

  it("the same tool call run again returns its first outcome without a second attempt", async () => {
    const c = await conversation();
    const first = await verifyIdentity(ctx(c.id, { toolCallId: "call_same" }), DANA);
    const again = await verifyIdentity(ctx(c.id, { toolCallId: "call_same" }), DANA);
    expect(again).toEqual(first);
    const failed = await verifyIdentity(ctx(c.id, { toolCallId: "call_fail" }), { ...DANA, order_number: "A-2001" });
    // Run again with what would now be right: still the recorded outcome of that call.
    expect(await verifyIdentity(ctx(c.id, { toolCallId: "call_fail" }), DANA)).toEqual(failed);
    expect(await tdb.prisma.verificationAttempt.count()).toBe(2);
  });
});

describe("attempt limits", () => {
  it(`per conversation: after ${ATTEMPT_LIMITS.failuresPerConversation} failures even the right details are refused, try later`, async () => {
    const c = await conversation();
    for (let i = 0; i < ATTEMPT_LIMITS.failuresPerConversation; i++) {
      expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com", order_number: `A-${1100 + i}` })).toMatchObject({
        status: "not_verified",
      });
    }
    const refused = await verifyIdentity(ctx(c.id), DANA);
    expect(refused).toEqual({
      status: "not_verified",
      retry_later: true,
      message: expect.stringMatching(/^Those details don't match our records.*try again later/),
    });
    expect((await tdb.prisma.conversation.findUniqueOrThrow({ where: { id: c.id } })).verifiedCustomerId).toBeNull();
    // Another conversation (another IP) is not affected; once the window has passed, this one may try again.
    expect(await verifyIdentity(ctx((await conversation({ ip: "198.51.100.9" })).id), DANA)).toMatchObject({ status: "verified" });
    const later = new Date(Date.now() + (ATTEMPT_LIMITS.windowMinutes + 1) * 60_000);
    expect(await verifyIdentity(ctx(c.id, { now: later }), DANA)).toMatchObject({ status: "verified" });
  });

  it(`per IP: ${ATTEMPT_LIMITS.failuresPerIp} failures from one address across fresh conversations lock that address out`, async () => {
    const ip = "203.0.113.7";
    for (let i = 0; i < ATTEMPT_LIMITS.failuresPerIp; i++) {
      const c = await conversation({ ip });
      // Different emails too, so neither the conversation nor the email limit is what stops it.
      await verifyIdentity(ctx(c.id), { email: `guess${i}@example.com`, order_number: "A-1001" });
    }
    const fresh = await conversation({ ip });
    expect(await verifyIdentity(ctx(fresh.id), DANA)).toMatchObject({ status: "not_verified", retry_later: true });
    expect(await verifyIdentity(ctx((await conversation({ ip: "203.0.113.8" })).id), DANA)).toMatchObject({ status: "verified" });
    // Another shop keeps its own counts.
    const elsewhere = await conversation({ ip, tenantId: globex.id });
    expect(
      await verifyIdentity(ctx(elsewhere.id, { tenantId: globex.id }), { email: "hank@globex.test", order_number: "G-9001" }),
    ).toMatchObject({
      status: "verified",
    });
  });

  it(`per email: ${ATTEMPT_LIMITS.failuresPerEmail} failures against one email from anywhere protect that account`, async () => {
    for (let i = 0; i < ATTEMPT_LIMITS.failuresPerEmail; i++) {
      const c = await conversation({ ip: `192.0.2.${i + 1}` });
      await verifyIdentity(ctx(c.id), { email: "dana@example.com", order_number: `A-${1200 + i}` });
    }
    const c = await conversation({ ip: "192.0.2.200" });
    expect(await verifyIdentity(ctx(c.id), DANA)).toMatchObject({ status: "not_verified", retry_later: true });
    // The same holds for an email without an account: reaching the limit says nothing about existence.
    for (let i = 0; i < ATTEMPT_LIMITS.failuresPerEmail; i++) {
      const d = await conversation({ ip: `192.0.2.${i + 50}` });
      await verifyIdentity(ctx(d.id), { email: "nobody@example.com", order_number: "A-1001" });
    }
    const e = await conversation({ ip: "192.0.2.201" });
    expect(await verifyIdentity(ctx(e.id), { email: "nobody@example.com", order_number: "A-1001" })).toMatchObject({ retry_later: true });
  });

  it("parallel guesses in one conversation cannot all slip under the limit", async () => {
    const c = await conversation();
    const guesses = Array.from({ length: 12 }, (_, i) => ({ email: "dana@example.com", order_number: `A-${1300 + i}` }));
    const answers = await Promise.all(guesses.map((g) => verifyIdentity(ctx(c.id), g)));
    expect(answers.filter((a) => a.retry_later !== true)).toHaveLength(ATTEMPT_LIMITS.failuresPerConversation);
    expect(await tdb.prisma.verificationAttempt.count({ where: { conversationId: c.id, outcome: "failed" } })).toBe(
      ATTEMPT_LIMITS.failuresPerConversation,
    );
  });
});

describe("one-time codes", () => {
  it("sends a code to an account's email (demo mailbox) and verifies with it once, at the email_code level", async () => {
    const c = await conversation();
    const sent = await requestVerificationCode(ctx(c.id), { email: "Dana@Example.com" });
    expect(sent).toMatchObject({ status: "code_requested", expires_in_minutes: CODE_TTL_MINUTES });
    const mail = await latestDemoMail("dana@example.com");
    expect(mail).toMatchObject({ tenantId: acme.id, subject: "Your Acme Outfitters verification code" });
    const stored = await tdb.prisma.verificationCode.findFirstOrThrow({ where: { conversationId: c.id } });
    expect(stored.codeHash).not.toContain(mail.code); // hashed, never in clear
    expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com", code: mail.code })).toMatchObject({
      status: "verified",
      level: "email_code",
      can_change_address: true,
    });
    // Used once.
    expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com", code: mail.code })).toMatchObject({ status: "not_verified" });
  });

  it("answers the same for an email without an account, and mails nothing", async () => {
    const c = await conversation();
    const known = await requestVerificationCode(ctx(c.id), { email: "dana@example.com" });
    const unknown = await requestVerificationCode(ctx(c.id), { email: "nobody@example.com" });
    expect(unknown).toEqual(known);
    expect(await tdb.prisma.mailOutbox.count({ where: { to: "nobody@example.com" } })).toBe(0);
    // A code row exists anyway (no customer behind it), so checking a code costs the same for both.
    expect(await tdb.prisma.verificationCode.count({ where: { conversationId: c.id, customerId: null } })).toBe(1);
    expect(await verifyIdentity(ctx(c.id), { email: "nobody@example.com", code: "123456" })).toEqual(
      await verifyIdentity(ctx(c.id), { email: "sam@example.com", code: "123456" }),
    );
  });

  it("works only in the conversation that asked, and only the latest code", async () => {
    const c = await conversation();
    await requestVerificationCode(ctx(c.id), { email: "dana@example.com" });
    const first = await latestDemoMail("dana@example.com");
    const other = await conversation({ ip: "198.51.100.1" });
    expect(await verifyIdentity(ctx(other.id), { email: "dana@example.com", code: first.code })).toMatchObject({ status: "not_verified" });
    await requestVerificationCode(ctx(c.id), { email: "dana@example.com" });
    const second = await latestDemoMail("dana@example.com");
    if (second.code !== first.code) {
      expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com", code: first.code })).toMatchObject({ status: "not_verified" });
    }
    expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com", code: second.code })).toMatchObject({ status: "verified" });
  });

  it("expires after its lifetime", async () => {
    const c = await conversation();
    await requestVerificationCode(ctx(c.id), { email: "dana@example.com" });
    const { code } = await latestDemoMail("dana@example.com");
    const later = new Date(Date.now() + (CODE_TTL_MINUTES + 1) * 60_000);
    expect(await verifyIdentity(ctx(c.id, { now: later }), { email: "dana@example.com", code })).toEqual({
      status: "not_verified",
      message: expect.stringMatching(/^Those details don't match our records/),
    });
  });

  it(`dies after ${MAX_CODE_ATTEMPTS} wrong tries: the right code is refused afterwards`, async () => {
    const c = await conversation();
    await requestVerificationCode(ctx(c.id), { email: "dana@example.com" });
    const { code } = await latestDemoMail("dana@example.com");
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0");
    for (let i = 0; i < MAX_CODE_ATTEMPTS; i++) {
      expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com", code: wrong })).toMatchObject({ status: "not_verified" });
    }
    // The code is dead (the conversation itself may still try: this is not the "try later" answer).
    expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com", code })).toEqual({
      status: "not_verified",
      message: expect.stringMatching(/^Those details don't match our records/),
    });
    expect(await tdb.prisma.verificationCode.findFirstOrThrow({ where: { conversationId: c.id } })).toMatchObject({
      attempts: MAX_CODE_ATTEMPTS + 1,
      consumedAt: null,
    });
    // A new code works.
    await requestVerificationCode(ctx(c.id), { email: "dana@example.com" });
    const fresh = await latestDemoMail("dana@example.com");
    expect(await verifyIdentity(ctx(c.id), { email: "dana@example.com", code: fresh.code })).toMatchObject({ status: "verified" });
  });

  it(`limits requests: ${ATTEMPT_LIMITS.codeRequestsPerConversation} per conversation, and ${ATTEMPT_LIMITS.codeMailsPerEmail} mails per inbox`, async () => {
    const c = await conversation();
    for (let i = 0; i < ATTEMPT_LIMITS.codeRequestsPerConversation; i++) {
      expect(await requestVerificationCode(ctx(c.id), { email: "dana@example.com" })).toMatchObject({ status: "code_requested" });
    }
    expect(await requestVerificationCode(ctx(c.id), { email: "dana@example.com" })).toMatchObject({
      status: "not_sent",
      retry_later: true,
    });
    expect(await tdb.prisma.mailOutbox.count({ where: { to: "dana@example.com" } })).toBe(ATTEMPT_LIMITS.codeMailsPerEmail);
    // From another conversation the answer is the usual one, but Dana's inbox gets nothing more.
    const other = await conversation({ ip: "198.51.100.2" });
    expect(await requestVerificationCode(ctx(other.id), { email: "dana@example.com" })).toMatchObject({ status: "code_requested" });
    expect(await tdb.prisma.mailOutbox.count({ where: { to: "dana@example.com" } })).toBe(ATTEMPT_LIMITS.codeMailsPerEmail);
  });
});
