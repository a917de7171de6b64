import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../db";
import { storeOf } from "@/lib/db/kysely";
import pg from "pg";
import { inject } from "vitest";
import { eventsSince, publishEvent } from "@/lib/events";

let tdb: TestDatabase;
beforeEach(async () => {
  tdb = await createTestDatabase();
});
afterEach(async () => {
  await tdb.drop();
});

describe("the event feed", () => {
  it("never lets a cursor pass an event whose transaction commits late", async () => {
    const tenant = await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let slowWritten!: () => void;
    const written = new Promise<void>((r) => (slowWritten = r));
    // A slow transaction takes the lower id, then waits before committing.
    const slow = storeOf(tdb.prisma)
      .transaction()
      .execute(async (tx) => {
        await tx.insertInto("Event").values({ tenantId: tenant.id, type: "slow", data: "{}" }).execute();
        slowWritten();
        await held;
      });
    await written;
    await publishEvent(tdb.prisma, { tenantId: tenant.id, type: "fast" }); // a higher id, committed first

    const whileOpen = await eventsSince(tdb.prisma, { tenantId: tenant.id }, 0n);
    expect(whileOpen.map((e) => e.type)).toEqual([]); // "fast" is withheld until "slow" settles

    release();
    await slow;
    const after = await eventsSince(tdb.prisma, { tenantId: tenant.id }, 0n);
    expect(after.map((e) => e.type)).toEqual(["slow", "fast"]);
    const resumed = await eventsSince(tdb.prisma, { tenantId: tenant.id }, after[0]!.id);
    expect(resumed.map((e) => e.type)).toEqual(["fast"]);
  });

  it("is not held back by a transaction open in another database of the server", async () => {
    // Another database on the same server (another app, another test file) keeps a write transaction open: its xid
    // can never write an event here, so this feed must not wait for it.
    const tenant = await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    const other = new pg.Client({ connectionString: inject("testDb").adminUrl });
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query("SELECT pg_current_xact_id()"); // the transaction has an xid: it is in every snapshot's horizon
      await publishEvent(tdb.prisma, { tenantId: tenant.id, type: "after" });
      // Polled, not read once: a transaction of another test file that commits between the feed's snapshot and its
      // look at pg_stat_activity holds the horizon for that one read (the rule above) — the open one must not, ever.
      await expect
        .poll(async () => (await eventsSince(tdb.prisma, { tenantId: tenant.id }, 0n)).map((e) => e.type), { timeout: 10_000 })
        .toEqual(["after"]);
    } finally {
      await other.query("ROLLBACK").catch(() => undefined);
      await other.end();
    }
  });

  it("is scoped to a tenant and, optionally, a conversation", async () => {
    const [acme, globex] = await Promise.all([
      tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } }),
      tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "globex" } }),
    ]);
    await publishEvent(tdb.prisma, { tenantId: acme.id, conversationId: "c1", type: "a1" });
    await publishEvent(tdb.prisma, { tenantId: acme.id, conversationId: "c2", type: "a2" });
    await publishEvent(tdb.prisma, { tenantId: globex.id, conversationId: "c1", type: "g1" });
    // The feed shows an event once no older transaction is open on the server — any database's (other test files
    // run beside this one): wait for that, then check the scoping.
    await expect.poll(async () => (await eventsSince(tdb.prisma, { tenantId: acme.id }, 0n)).length, { timeout: 10_000 }).toBe(2);
    expect((await eventsSince(tdb.prisma, { tenantId: acme.id }, 0n)).map((e) => e.type)).toEqual(["a1", "a2"]);
    expect((await eventsSince(tdb.prisma, { tenantId: acme.id, conversationId: "c2" }, 0n)).map((e) => e.type)).toEqual(["a2"]);
  });
});
