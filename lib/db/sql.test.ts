import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { createPrisma } from "./client";
import { Prisma } from "./prisma-types";
import { fastSql, prismaOf, runtimeTransaction, sqlTransaction } from "./sql";

let tdb: TestDatabase;
beforeAll(async () => { tdb = await createTestDatabase(); });
afterAll(async () => { await tdb.drop(); });

const eventsOfType = async (type: string) => tdb.prisma.event.count({ where: { type } });
const insertEvent = (type: string) => Prisma.sql`INSERT INTO "Event" ("tenantId", type, data) SELECT id, ${type}, '{}'::jsonb FROM "Tenant" WHERE slug = 'acme'`;

describe("the pg fast path reads and writes what Prisma does", () => {
  it("timestamps are UTC both ways, whatever the process's time zone", async () => {
    const zone = process.env.TZ;
    process.env.TZ = "America/New_York";
    try {
      const at = new Date("2026-03-08T06:30:00.123Z"); // around a DST change in New York
      const sql = fastSql(tdb.prisma);
      const [{ id }] = await sql.query<{ id: bigint }>(Prisma.sql`
        INSERT INTO "Event" ("tenantId", type, data, "createdAt") SELECT id, 'tz', '{}'::jsonb, ${at} FROM "Tenant" WHERE slug = 'acme' RETURNING id`) as [{ id: bigint }];
      expect(typeof id).toBe("bigint"); // int8 as Prisma returns it
      const viaPrisma = await tdb.prisma.event.findUniqueOrThrow({ where: { id } });
      expect(viaPrisma.createdAt.toISOString()).toBe(at.toISOString());
      const [viaPg] = await sql.query<{ createdAt: Date }>(Prisma.sql`SELECT "createdAt" FROM "Event" WHERE id = ${id}`);
      expect(viaPg!.createdAt.toISOString()).toBe(at.toISOString());
    } finally {
      process.env.TZ = zone;
    }
  });
});

describe("transactions", () => {
  it("sqlTransaction commits together or not at all", async () => {
    await expect(sqlTransaction(tdb.prisma, async (sql) => {
      await sql.execute(insertEvent("tx-rolled-back"));
      throw new Error("boom");
    })).rejects.toThrow("boom");
    expect(await eventsOfType("tx-rolled-back")).toBe(0);
    await sqlTransaction(tdb.prisma, async (sql) => { await sql.execute(insertEvent("tx-committed")); });
    expect(await eventsOfType("tx-committed")).toBe(1);
  });

  it("a step that needs Prisma's models is rolled back on the fast path and redone, once, in a Prisma transaction", async () => {
    const attempts: string[] = [];
    const result = await runtimeTransaction(tdb.prisma, async (tx) => {
      attempts.push(tx.via);
      await tx.execute(insertEvent("redone"));
      const prisma = prismaOf(tx); // the pg attempt stops here
      await prisma.event.create({ data: { tenantId: (await prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id, type: "redone-via-prisma", data: {} } });
      return "done";
    });
    expect(result).toBe("done");
    expect(attempts).toEqual(["pg", "prisma"]);
    expect(await eventsOfType("redone")).toBe(1);
    expect(await eventsOfType("redone-via-prisma")).toBe(1);
  });
});

describe("the client's pool", () => {
  it("is ended by $disconnect even when only the fast path used it", async () => {
    const client = createPrisma(tdb.url, { max: 1 });
    await fastSql(client).query(Prisma.sql`SELECT 1`);
    await client.$disconnect();
    await expect(fastSql(client).query(Prisma.sql`SELECT 1`)).rejects.toThrow(/after calling end|ended/i);
  });
});
