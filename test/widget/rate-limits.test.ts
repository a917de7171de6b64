import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createPrisma } from "@/lib/db/client";
import { limitMessage } from "@/lib/widget/limits";
import { widgetTenant } from "@/lib/widget/session";
import { captureLogLines } from "../log-lines";
import {
  afterCallbacks,
  publishWidgetLimits,
  RELAXED_WIDGET_LIMITS,
  runAfterCallbacks,
  type WidgetRoutes,
  widgetRoutes,
} from "../widget-routes";

vi.mock("next/server", async (original) => ({
  ...(await original<typeof import("next/server")>()),
  after: (fn: () => unknown) => afterCallbacks.push(fn),
}));

// The public widget's limits: per conversation, per client IP and per shop for messages, per IP for new conversations
// and for reads. Counted in PostgreSQL, so a second process (its own pool and limiter) sees the same counts.
let w: WidgetRoutes;
beforeAll(async () => {
  w = await widgetRoutes();
});
afterAll(async () => {
  await runAfterCallbacks();
  await w.close();
});

async function messagesOf(token: string) {
  return (await w.view(token)).body.view.messages.map((m: { text: string }) => m.text);
}

function expectLimited(res: { status: number; headers: Headers; body: any }, message: RegExp) {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ code: "RATE_LIMITED", message: expect.stringMatching(message) });
  const retryAfter = Number(res.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(3600);
}

describe("widget rate limits", () => {
  it("per conversation: past the limit a 429 with a polite sentence and Retry-After; what came before is kept", async () => {
    await publishWidgetLimits(w, { ...RELAXED_WIDGET_LIMITS, messagesPerMinutePerConversation: 3 });
    const { body: s } = await w.start({ ip: "203.0.113.1" });
    for (const text of ["one", "two", "three"]) expect((await w.send(s.token, { text }, { ip: "203.0.113.1" })).status).toBe(202);
    const refused = await w.send(s.token, { text: "four" }, { ip: "203.0.113.1" });
    expectLimited(refused, /faster than we can answer.*everything you sent before this has been received/);
    expect(await messagesOf(s.token)).toEqual(["one", "two", "three"]);
    // "Talk to a person" counts as a message too.
    expectLimited(await w.human(s.token, { ip: "203.0.113.1" }), /faster than we can answer/);
    // Another conversation from the same address has its own count.
    const { body: other } = await w.start({ ip: "203.0.113.1" });
    expect((await w.send(other.token, { text: "hello" }, { ip: "203.0.113.1" })).status).toBe(202);
  });

  it("per client IP, over all its conversations; another address is unaffected", async () => {
    await publishWidgetLimits(w, { ...RELAXED_WIDGET_LIMITS, messagesPerMinutePerIp: 4 });
    const ip = "198.51.100.7";
    const a = (await w.start({ ip })).body.token;
    const b = (await w.start({ ip })).body.token;
    for (const token of [a, b, a, b]) expect((await w.send(token, { text: "hi" }, { ip })).status).toBe(202);
    expectLimited(await w.send(a, { text: "again" }, { ip }), /faster than we can answer/);
    expectLimited(await w.send(b, { text: "again" }, { ip }), /faster than we can answer/);
    const elsewhere = (await w.start({ ip: "198.51.100.8" })).body.token;
    expect((await w.send(elsewhere, { text: "hi" }, { ip: "198.51.100.8" })).status).toBe(202);
  });

  it("per shop, over every visitor; the count holds across processes", async () => {
    await publishWidgetLimits(w, { ...RELAXED_WIDGET_LIMITS, messagesPerMinutePerShop: 3 });
    const tokens = await Promise.all([1, 2, 3, 4].map(async (i) => (await w.start({ ip: `192.0.2.${i}` })).body.token));
    for (const [i, token] of tokens.slice(0, 3).entries())
      expect((await w.send(token, { text: "hi" }, { ip: `192.0.2.${i + 1}` })).status).toBe(202);
    expectLimited(await w.send(tokens[3], { text: "hi" }, { ip: "192.0.2.4" }), /receiving a lot of messages right now/);
    // A second process: its own client, pool and limiter — the same count in the database.
    const second = createPrisma(w.tdb.url, { max: 2 });
    try {
      const tenant = await widgetTenant(second, "acme");
      const conv = await second.conversation.findFirstOrThrow({ where: { tenantId: tenant.id }, orderBy: { createdAt: "desc" } });
      await expect(limitMessage(second, tenant, conv.id, "192.0.2.99")).rejects.toMatchObject({
        code: "RATE_LIMITED",
        details: { scope: "shop" },
      });
    } finally {
      await second.$disconnect();
    }
  });

  it("new conversations per client IP; resuming one is not counted", async () => {
    await publishWidgetLimits(w, { ...RELAXED_WIDGET_LIMITS, conversationsPerHourPerIp: 2 });
    const ip = "203.0.113.50";
    const first = await w.start({ ip });
    expect(first.status).toBe(200);
    expect((await w.start({ ip })).status).toBe(200);
    expectLimited(await w.start({ ip }), /Too many chats have been started from your network/);
    const resumed = await w.start({ ip, token: first.body.token });
    expect(resumed.status).toBe(200);
    expect(resumed.body.resumed).toBe(true);
    expect((await w.start({ ip: "203.0.113.51" })).status).toBe(200);
  });

  // A client that keeps sending past its limit (a script, a stuck retry loop) is refused at every request; the log
  // says so once per client and limit, not once per request, so a flood cannot bury every other line.
  const logLines = captureLogLines();
  const limitLines = () => logLines().filter((l) => /rate limit/.test(l.msg));

  it("a client held over a limit is logged once for it, whatever number of requests it keeps sending", async () => {
    await publishWidgetLimits(w, { ...RELAXED_WIDGET_LIMITS, messagesPerMinutePerConversation: 2 });
    const ip = "203.0.113.90";
    const { token } = (await w.start({ ip })).body;
    for (const text of ["one", "two"]) expect((await w.send(token, { text }, { ip })).status).toBe(202);
    for (let i = 0; i < 6; i++) expectLimited(await w.send(token, { text: `again ${i}` }, { ip }), /faster than we can answer/);
    expect(limitLines()).toEqual([
      expect.objectContaining({ level: "warn", msg: "widget rate limit reached", limit: "wmsgconv", scope: "conversation" }),
    ]);
    // Another client over the same limit is a line of its own.
    const other = (await w.start({ ip })).body.token;
    for (const text of ["one", "two"]) expect((await w.send(other, { text }, { ip })).status).toBe(202);
    for (let i = 0; i < 3; i++) expectLimited(await w.send(other, { text: `again ${i}` }, { ip }), /faster than we can answer/);
    expect(limitLines()).toHaveLength(2);
    expect(new Set(limitLines().map((l) => l.conversationId)).size).toBe(2);
  });

  it("reads per client IP (the view), by SUPPORT_WIDGET_READS_PER_MIN", async () => {
    await publishWidgetLimits(w, RELAXED_WIDGET_LIMITS);
    const ip = "203.0.113.77";
    const { token } = (await w.start({ ip })).body;
    process.env.SUPPORT_WIDGET_READS_PER_MIN = "3";
    try {
      for (let i = 0; i < 3; i++) expect((await w.view(token, { ip })).status).toBe(200);
      for (let i = 0; i < 4; i++) expectLimited(await w.view(token, { ip }), /refreshing too often/);
      expect(limitLines()).toEqual([expect.objectContaining({ msg: "widget rate limit reached", limit: "wread", scope: "ip" })]);
    } finally {
      delete process.env.SUPPORT_WIDGET_READS_PER_MIN;
    }
  });
});
