import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleEventsAfter, eventHead } from "@/lib/console/queries";
import { publishEvent } from "@/lib/events";
import { touchesQueue } from "@/lib/live/feed-topics";
import { createTestDatabase, type TestDatabase } from "@/test/db";

// An open queue in a reviewer's console follows only what can change it (a handoff's events, a take-over): a
// customer's message, a run's step, a reply neither wakes nor answers its long poll. Before, every event of the shop
// answered every open console's poll — one request, one read of the feed and one refetch check per open console per
// event of the shop.

let db: TestDatabase;
let acme: string;
let conversationId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  // The process's one listener (lib/live/hub) listens to this database.
  process.env.DATABASE_URL = db.url;
  delete process.env.SUPPORT_DB_NAME;
  acme = (await db.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id;
  conversationId = (await db.prisma.conversation.create({ data: { tenantId: acme, tokenHash: `t-${Date.now()}` } })).id;
});
afterAll(async () => {
  await db?.drop();
});

const TYPES = [
  "handoff.created",
  "handoff.claimed",
  "handoff.updated",
  "handoff.decided",
  "conversation.updated",
  "conversation.created",
  "conversation.customer_message",
  "message.created",
  "run.started",
  "run.completed",
  "run.dead_lettered",
];

const say = (type: string, data: unknown = {}) => publishEvent(db.prisma, { tenantId: acme, conversationId, type, data });
const pending = Symbol("pending");
const settled = <T>(p: Promise<T>, ms: number) => Promise.race([p, new Promise<typeof pending>((r) => setTimeout(() => r(pending), ms))]);

describe("the database's notification", () => {
  it("marks exactly the events the queue follows (the same rule as touchesQueue)", async () => {
    const listener = new pg.Client({ connectionString: db.url });
    await listener.connect();
    const heard: { q: boolean }[] = [];
    listener.on("notification", (n) => heard.push(JSON.parse(n.payload ?? "{}")));
    await listener.query("LISTEN support_events");
    try {
      for (const type of TYPES) {
        heard.length = 0;
        await say(type);
        for (let i = 0; i < 50 && !heard.length; i++) await new Promise((r) => setTimeout(r, 20));
        expect({ type, q: heard[0]?.q }).toEqual({ type, q: touchesQueue(type) });
      }
    } finally {
      await listener.end();
    }
  });
});

describe("a queue's long poll (topic: queue)", () => {
  it("is not answered by a customer's messages and a run's steps, and is by a handoff's event", async () => {
    const head = await eventHead(db.prisma, acme);
    const poll = consoleEventsAfter(db.prisma, acme, BigInt(head), { waitMs: 8000, topic: "queue" });
    await new Promise((r) => setTimeout(r, 300)); // waiting
    await say("message.created", { seq: 1 });
    await say("run.started");
    await say("message.created", { seq: 2 });
    expect(await settled(poll, 700), "answered by events the queue does not show").toBe(pending);
    await say("handoff.claimed", { handoffId: "h-1" });
    const page = await poll;
    expect(page.events.map((e) => e.type)).toEqual(["handoff.claimed"]);
    expect(BigInt(page.cursor)).toBe(BigInt(page.events[0]!.id));
  });

  it("moves its cursor past what it skipped, so the next poll does not read it again", async () => {
    const head = await eventHead(db.prisma, acme);
    await say("message.created", { seq: 3 });
    await say("run.completed");
    const page = await consoleEventsAfter(db.prisma, acme, BigInt(head), { waitMs: 300, topic: "queue" });
    expect(page.events).toEqual([]);
    expect(BigInt(page.cursor)).toBe(BigInt(await eventHead(db.prisma, acme)));
    expect(BigInt(page.cursor)).toBeGreaterThan(BigInt(head));
  });

  it("without a topic, answers at the first event of the shop, as before", async () => {
    const head = await eventHead(db.prisma, acme);
    const poll = consoleEventsAfter(db.prisma, acme, BigInt(head), { waitMs: 8000 });
    await new Promise((r) => setTimeout(r, 300));
    await say("message.created", { seq: 4 });
    expect((await poll).events.map((e) => e.type)).toEqual(["message.created"]);
  });
});
