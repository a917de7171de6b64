import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleEventsAfter, eventHead } from "@/lib/console/queries";
import { stopListeners } from "@/lib/db/listener";
import { publishEvent } from "@/lib/events";
import { listenerGeneration, waitForFeed } from "@/lib/live/hub";
import { countStatements } from "@/bench/peers/scenario";
import { createTestDatabase, type TestDatabase } from "@/test/db";

// An open widget or console at rest costs the database nothing between its reads. With the process's one listener up,
// a wait that hears nothing for its scope ends `quiet`, and the stream or long poll reads nothing more (before, every
// open widget read its view again at each 10-second heartbeat, and every console poll read the feed again when it
// timed out). When the listener loses its connection, notifications may be missed: its reconnect ends every wait, and
// a wait begun with the generation of a read made before the reconnect ends at once.

let db: TestDatabase;
let acme: string;
let conversationId: string;
let otherConversationId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  // The process's one listener (lib/live/hub) listens to this database.
  process.env.DATABASE_URL = db.url;
  delete process.env.SUPPORT_DB_NAME;
  acme = (await db.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id;
  conversationId = (await db.prisma.conversation.create({ data: { tenantId: acme, tokenHash: `rest-${Date.now()}` } })).id;
  otherConversationId = (await db.prisma.conversation.create({ data: { tenantId: acme, tokenHash: `rest2-${Date.now()}` } })).id;
});
afterAll(async () => {
  await stopListeners();
  await db?.drop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (conversation: string) =>
  publishEvent(db.prisma, { tenantId: acme, conversationId: conversation, type: "message.created", data: { seq: 1 } });

describe("the listener coming up", () => {
  // First in this file: the process has not listened yet. A stream reads its view, then waits — and the first wait
  // starts the listener; what was committed between the read and the LISTEN was never heard.
  it("ends at once a wait whose caller read before the listener first listened", async () => {
    const readAt = listenerGeneration();
    const started = Date.now();
    expect(await waitForFeed({ tenantId: acme, conversationId }, { timeoutMs: 5000, fallbackMs: 5000, since: readAt })).toBe("notified");
    expect(Date.now() - started).toBeLessThan(3000);
    expect(listenerGeneration()).toBe(readAt + 1);
  });
});

describe("a wait with the listener up", () => {
  it("ends quiet when nothing is written for its conversation — an event of another conversation included", async () => {
    const scope = { tenantId: acme, conversationId };
    expect(await waitForFeed(scope, { timeoutMs: 300, fallbackMs: 300 })).toBe("quiet");
    const waiting = waitForFeed(scope, { timeoutMs: 800, fallbackMs: 800 });
    await sleep(100);
    await say(otherConversationId);
    expect(await waiting).toBe("quiet");
  });

  it("ends notified by an event for its conversation, at once", async () => {
    const waiting = waitForFeed({ tenantId: acme, conversationId }, { timeoutMs: 5000, fallbackMs: 5000 });
    await sleep(100);
    const wrote = Date.now();
    await say(conversationId);
    expect(await waiting).toBe("notified");
    expect(Date.now() - wrote).toBeLessThan(2000);
  });

  it("ends at once after the listener reconnected, when the caller read before the reconnect", async () => {
    const scope = { tenantId: acme, conversationId };
    await waitForFeed(scope, { timeoutMs: 50, fallbackMs: 50 }); // the listener is up
    const readAt = listenerGeneration();
    // The database drops the listener's connection (a restart, a network cut): whatever was notified meanwhile is lost.
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN%'`,
      );
      expect(rows[0]!.n).toBe(1);
    } finally {
      await admin.end();
    }
    for (let i = 0; i < 100 && listenerGeneration() === readAt; i++) await sleep(100);
    expect(listenerGeneration()).toBe(readAt + 1);

    const started = Date.now();
    expect(await waitForFeed(scope, { timeoutMs: 5000, fallbackMs: 5000, since: readAt })).toBe("notified");
    expect(Date.now() - started).toBeLessThan(1000);
    // Read since the reconnect: quiet again, and notified by the next event (the listener hears again).
    expect(await waitForFeed(scope, { timeoutMs: 300, fallbackMs: 300, since: listenerGeneration() })).toBe("quiet");
    const waiting = waitForFeed(scope, { timeoutMs: 5000, fallbackMs: 5000, since: listenerGeneration() });
    await sleep(100);
    await say(conversationId);
    expect(await waiting).toBe("notified");
  });
});

describe("a console's long poll at rest", () => {
  it("reads the feed once, when it begins — not again when it ends with nothing new", async () => {
    const head = await eventHead(db.prisma, acme);
    await waitForFeed({ tenantId: acme }, { timeoutMs: 50, fallbackMs: 50 }); // the listener is up
    const counter = countStatements(pg.Client); // every statement ends on pg's Client (Prisma's adapter, the SQL store)
    counter.sent = [];
    let result: Awaited<ReturnType<typeof consoleEventsAfter>>;
    try {
      result = await consoleEventsAfter(db.prisma, acme, BigInt(head), { waitMs: 700, conversationId });
    } finally {
      counter.restore();
    }
    expect(result.events).toEqual([]);
    expect(counter.sent.filter((q) => q.text.includes('"Event"'))).toHaveLength(1);
  });

  it("still answers an event for it, read after the notification", async () => {
    const head = await eventHead(db.prisma, acme);
    const poll = consoleEventsAfter(db.prisma, acme, BigInt(head), { waitMs: 5000, conversationId });
    await sleep(200);
    await say(conversationId);
    const page = await poll;
    expect(page.events.map((e) => e.type)).toEqual(["message.created"]);
  });
});
