import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ATTEMPT_LIMITS } from "@/lib/identity/attempts";
import { verifyIdentity } from "@/lib/identity/verification";
import {
  afterCallbacks,
  publishWidgetLimits,
  RELAXED_WIDGET_LIMITS,
  runAfterCallbacks,
  type WidgetRoutes,
  widgetRoutes,
} from "../widget-routes";
import { createHarness, type Harness } from "../runtime-harness";
import { savedEnv } from "../saved-env";

// A customer in the chat widget who guesses, enumerates or probes to learn or get what is not theirs.

vi.mock("next/server", async (original) => ({
  ...(await original<typeof import("next/server")>()),
  after: (fn: () => unknown) => afterCallbacks.push(fn),
}));

// ---------------------------------------------------------------------------------------------------------------
// Per-IP limits through the widget's own routes.
// ---------------------------------------------------------------------------------------------------------------
describe("per-IP limits against a client that controls its own X-Forwarded-For (default SUPPORT_TRUSTED_PROXY_HOPS=0)", () => {
  let w: WidgetRoutes;
  beforeAll(async () => {
    delete process.env.SUPPORT_TRUSTED_PROXY_HOPS; // the default
    w = await widgetRoutes();
  });
  afterAll(async () => {
    await runAfterCallbacks();
    await w.close();
  });

  // Next's server only fills x-forwarded-for when the request has none (`??=`), so what a directly exposed app sees
  // there is whatever the client wrote. A value that is not an address ("unknown" is what several proxies write)
  // makes clientAddress() answer null, and every per-IP limit is then skipped — the client opted out of them.
  it("a junk X-Forwarded-For does not turn the new-conversations-per-IP limit off", async () => {
    await publishWidgetLimits(w, { ...RELAXED_WIDGET_LIMITS, conversationsPerHourPerIp: 2 });
    // Control: from a real address the limit holds.
    const real = [];
    for (let i = 0; i < 3; i++) real.push((await w.start({ ip: "203.0.113.61" })).status);
    expect(real).toEqual([200, 200, 429]);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await w.start({ ip: "unknown" })).status);
    // The limit is 2 per client per hour: at most 2 of these 6 may open a chat.
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(2);
  });

  it("a junk X-Forwarded-For does not turn the messages-per-IP limit off", async () => {
    await publishWidgetLimits(w, { ...RELAXED_WIDGET_LIMITS, messagesPerMinutePerIp: 3 });
    const tokens: string[] = [];
    for (let i = 0; i < 3; i++) tokens.push((await w.start({ ip: "unknown" })).body.token);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await w.send(tokens[i % 3]!, { text: `hello ${i}` }, { ip: "unknown" })).status);
    expect(statuses.filter((s) => s === 202).length).toBeLessThanOrEqual(3);
  });

  it("a junk X-Forwarded-For does not turn the reads-per-IP limit off", async () => {
    await publishWidgetLimits(w, RELAXED_WIDGET_LIMITS);
    const { token } = (await w.start({ ip: "203.0.113.62" })).body;
    process.env.SUPPORT_WIDGET_READS_PER_MIN = "3";
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await w.view(token, { ip: "unknown" })).status);
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(3);
    } finally {
      delete process.env.SUPPORT_WIDGET_READS_PER_MIN;
    }
  });

  it("identity attempts from a junk-X-Forwarded-For client are still limited per client, across fresh conversations", async () => {
    await publishWidgetLimits(w, RELAXED_WIDGET_LIMITS);
    await w.tdb.prisma.verificationAttempt.deleteMany();
    const acme = await w.tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    // What POST /messages records on each conversation as the sender's address (the per-IP scope of identity checks).
    const conversations: string[] = [];
    const perConversation = ATTEMPT_LIMITS.failuresPerConversation - 1;
    const needed = Math.ceil((ATTEMPT_LIMITS.failuresPerIp + 5) / perConversation);
    for (let i = 0; i < needed; i++) {
      const { token, view } = (await w.start({ ip: "unknown" })).body;
      expect((await w.send(token, { text: "hi" }, { ip: "unknown" })).status).toBe(202);
      conversations.push(view.conversationId);
    }
    await runAfterCallbacks();
    // The scripted attacker: many different emails (so the per-email limit is not what stops it), a few per
    // conversation (so the per-conversation limit is not either) — only the per-client limit can.
    let limited = 0;
    let n = 0;
    for (const conversationId of conversations) {
      for (let i = 0; i < perConversation; i++, n++) {
        const out = await verifyIdentity(
          { db: w.tdb.prisma, tenantId: acme.id, conversationId, toolCallId: `probe_${randomBytes(6).toString("hex")}` },
          { email: `guess${n}@example.net`, order_number: "A-1001" },
        );
        if (out.retry_later) limited++;
      }
    }
    expect(n).toBeGreaterThan(ATTEMPT_LIMITS.failuresPerIp);
    // From one client, more than failuresPerIp guesses in the window must meet "try again later".
    expect(limited).toBeGreaterThan(0);
  });

  // IPv6: a client normally holds a whole /64 (2^64 addresses). Counting each address on its own lets one client
  // rotate through its prefix and never meet a per-IP limit.
  it("new conversations from one IPv6 /64 are counted together", async () => {
    await publishWidgetLimits(w, { ...RELAXED_WIDGET_LIMITS, conversationsPerHourPerIp: 2 });
    // Control: one and the same IPv6 address is limited.
    const same = [];
    for (let i = 0; i < 3; i++) same.push((await w.start({ ip: "2001:db8:3:1::1" })).status);
    expect(same).toEqual([200, 200, 429]);
    const statuses: number[] = [];
    for (let i = 1; i <= 6; i++) statuses.push((await w.start({ ip: `2001:db8:4:2::${i.toString(16)}` })).status);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(2);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Account enumeration by send_verification_code: the answer is the same, but is the time to it?
// ---------------------------------------------------------------------------------------------------------------
describe("send_verification_code: the reply does not wait on something only an existing account causes", () => {
  let h: Harness;
  let server: SMTPServer;
  let port: number;
  let releaseRcpt: () => void = () => {};
  let rcptSeen = 0;
  const mailEnv = savedEnv("SMTP_URL", "MAIL_FROM");

  beforeAll(async () => {
    h = await createHarness();
    server = new SMTPServer({
      disabledCommands: ["STARTTLS", "AUTH"],
      // The mail server takes its time over the recipient (a slow relay, a greylisting provider): held until released.
      onRcptTo(_address, _session, callback) {
        rcptSeen++;
        const held = new Promise<void>((resolve) => {
          const previous = releaseRcpt;
          releaseRcpt = () => {
            previous();
            resolve();
          };
        });
        void held.then(() => callback());
      },
      onData(stream, _session, callback) {
        stream.on("data", () => {});
        stream.on("end", () => callback());
      },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.server.address() as AddressInfo).port;
    process.env.SMTP_URL = `smtp://127.0.0.1:${port}`;
    process.env.MAIL_FROM = "Acme Support <support@acme.test>";
  });
  afterAll(async () => {
    releaseRcpt();
    mailEnv.restore();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
  });

  const text = (t: string) => ({ type: "text" as const, text: t });
  const toolUse = (id: string, name: string, input: unknown) => ({ type: "tool_use" as const, id, name, input });

  /** Asks for a code for `email`; whether the customer's reply came before the mail server was let go. */
  async function codeRequest(email: string, id: string) {
    h.script.push(
      { reply: { content: [toolUse(id, "send_verification_code", { email })], stop_reason: "tool_use" } },
      { reply: { content: [text("If an account exists for that email address, a code is on its way.")], stop_reason: "end_turn" } },
    );
    const events: string[] = [];
    const reply = h.say(`please send me a code, my email is ${email}`).then((out) => {
      events.push("reply");
      return out;
    });
    // Generous: a scripted turn takes well under a second; the mail server is held for 15 s at most, then let go
    // (nodemailer itself gives up on a silent server after 20 s).
    const fallback = setTimeout(() => {
      events.push("mail server answered");
      releaseRcpt();
    }, 15_000);
    const out = await reply;
    clearTimeout(fallback);
    return { events, out };
  }

  /** Waits (15 s at most) until the mail server has been asked to take `n` recipients: the mail is really on its way. */
  async function recipientsSeen(n: number) {
    for (const started = Date.now(); rcptSeen < n && Date.now() - started < 15_000; ) await new Promise((r) => setTimeout(r, 20));
    return rcptSeen;
  }

  it("an email without an account: the reply comes at once (nothing is mailed)", async () => {
    const { events, out } = await codeRequest("nobody@example.com", "toolu_unknown");
    expect(out.phase).toBe("COMPLETED");
    expect(events[0]).toBe("reply");
    expect(rcptSeen).toBe(0);
  });

  it("an email with an account: the reply does not wait for the mail server either (else its delay tells the account exists)", async () => {
    const { events, out } = await codeRequest("dana@example.com", "toolu_known");
    expect(out.phase).toBe("COMPLETED");
    // Same answer text for both — and the same time: were the customer's reply held until the mail server answered,
    // only for an email that has an account, timing the chat would tell which emails are customers of the shop.
    expect(events[0]).toBe("reply");
    expect(await recipientsSeen(1)).toBe(1); // the mail was really being sent
    releaseRcpt();
    // …and it arrives, once the mail server takes it.
    let status: string | undefined;
    for (const started = Date.now(); status !== "sent" && Date.now() - started < 15_000; await new Promise((r) => setTimeout(r, 20)))
      status = (await h.db.mailOutbox.findFirst({ where: { to: "dana@example.com" }, orderBy: { createdAt: "desc" } }))?.status;
    expect(status).toBe("sent");
  });
});
