import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../db";
import { eventsSince, publishEvent } from "@/lib/events";

let tdb: TestDatabase;
beforeEach(async () => { tdb = await createTestDatabase(); });
afterEach(async () => { await tdb.drop(); });

describe("the event feed", () => {
  it("never lets a cursor pass an event whose transaction commits late", async () => {
    const tenant = await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let slowWritten!: () => void;
    const written = new Promise<void>((r) => (slowWritten = r));
    // A slow transaction takes the lower id, then waits before committing.
    const slow = tdb.prisma.$transaction(async (tx) => {
      await publishEvent(tx, { tenantId: tenant.id, type: "slow" });
      slowWritten();
      await held;
    }, { timeout: 20_000 });
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

  it("is scoped to a tenant and, optionally, a conversation", async () => {
    const [acme, globex] = await Promise.all([tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } }), tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "globex" } })]);
    await publishEvent(tdb.prisma, { tenantId: acme.id, conversationId: "c1", type: "a1" });
    await publishEvent(tdb.prisma, { tenantId: acme.id, conversationId: "c2", type: "a2" });
    await publishEvent(tdb.prisma, { tenantId: globex.id, conversationId: "c1", type: "g1" });
    expect((await eventsSince(tdb.prisma, { tenantId: acme.id }, 0n)).map((e) => e.type)).toEqual(["a1", "a2"]);
    expect((await eventsSince(tdb.prisma, { tenantId: acme.id, conversationId: "c2" }, 0n)).map((e) => e.type)).toEqual(["a2"]);
  });
});
