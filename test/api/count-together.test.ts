import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { countTogether, rateLimitCounter } from "@/lib/api/rate-limit";
import { createPrisma } from "@/lib/db/client";
import { poolOf } from "@/lib/db/sql";
import { createTestDatabase, type TestDatabase } from "../db";

// Several limits counted in one statement (a widget message: per conversation, per IP, per shop). Same rows as the
// single counters, so both see one count; racing requests that share a row get exactly its number between them.
let tdb: TestDatabase;
let second: TestDatabase["prisma"];
let poolA: pg.Pool;
let poolB: pg.Pool;
beforeAll(async () => {
  tdb = await createTestDatabase({ seed: false });
  second = createPrisma(tdb.url, { max: 6 });
  poolA = poolOf(tdb.prisma)!;
  poolB = poolOf(second)!;
});
afterAll(async () => {
  await second.$disconnect();
  await tdb.drop();
});

const perMinute = (points: number) => ({ points, windowSeconds: 60 });

describe("countTogether", () => {
  it("counts every limit; the first over its number, in the order given, answers", async () => {
    const limits = [
      { name: "tconv", policy: perMinute(2), key: "c1" },
      { name: "tshop", policy: perMinute(3), key: "s1" },
    ];
    expect(await countTogether(poolA, limits)).toBeNull();
    expect(await countTogether(poolB, limits)).toBeNull(); // another process: the same rows
    const third = await countTogether(poolA, limits);
    expect(third).toMatchObject({ index: 0 }); // the conversation is over; the shop (3 of 3) is not yet
    expect(third!.retryAfterSeconds).toBeGreaterThanOrEqual(59);
    expect(third!.retryAfterSeconds).toBeLessThanOrEqual(60);
    // Another conversation of the same shop: the shop's fourth request is refused.
    expect(await countTogether(poolB, [{ name: "tconv", policy: perMinute(2), key: "c2" }, limits[1]!])).toMatchObject({ index: 1 });
    // The single counter reads the same row: the shop is over.
    expect(await rateLimitCounter(poolA, "tshop", perMinute(3)).count("s1")).toMatchObject({ refused: true });
  });

  it("refuses from memory once over, without another statement", async () => {
    const limits = [{ name: "tmem", policy: perMinute(1), key: "k" }];
    expect(await countTogether(poolA, limits)).toBeNull();
    expect(await countTogether(poolA, limits)).toMatchObject({ index: 0 });
    const before = (await poolA.query("SELECT points FROM \"ApiRateLimit\" WHERE key = 'tmem1per60s:k'")).rows[0].points;
    for (let i = 0; i < 5; i++) expect(await countTogether(poolA, limits)).toMatchObject({ index: 0 });
    const after = (await poolA.query("SELECT points FROM \"ApiRateLimit\" WHERE key = 'tmem1per60s:k'")).rows[0].points;
    expect(after).toBe(before);
  });

  it("a window that ended starts again at one", async () => {
    const limits = [{ name: "tend", policy: perMinute(1), key: "k" }];
    expect(await countTogether(poolB, limits)).toBeNull();
    await poolB.query(`UPDATE "ApiRateLimit" SET expire = $1 WHERE key = 'tend1per60s:k'`, [Date.now() - 1]);
    expect(await countTogether(poolB, limits)).toBeNull();
    expect((await poolB.query(`SELECT points FROM "ApiRateLimit" WHERE key = 'tend1per60s:k'`)).rows[0].points).toBe(1);
  });

  it("racing requests from two processes over a shared row: exactly its number get through, and no deadlock", async () => {
    const shop = { name: "trace", policy: perMinute(25), key: "shop" };
    const tries = Array.from({ length: 60 }, (_, i) =>
      countTogether(i % 2 ? poolA : poolB, [
        { name: "trconv", policy: perMinute(100), key: `c${i % 7}` },
        { name: "trip", policy: perMinute(100), key: `ip${i % 5}` },
        shop,
      ]),
    );
    const answers = await Promise.all(tries);
    expect(answers.filter((a) => a === null)).toHaveLength(25);
    expect(answers.filter((a) => a !== null).every((a) => a!.index === 2)).toBe(true);
  });

  it("the counters are an UNLOGGED table (a count's commit waits for no disk); emptied, as a crash leaves it, counting starts again", async () => {
    // Every message of a shop locks the shop's row until its count commits: logged, each waited there for the
    // commit (an fsync) of the one before it. A crash of the database empties an unlogged table: windows restart.
    const { rows } = await poolA.query(`SELECT relpersistence FROM pg_class WHERE oid = '"ApiRateLimit"'::regclass`);
    expect(rows[0].relpersistence).toBe("u");
    const limits = [{ name: "tcrash", policy: perMinute(1), key: "k" }];
    expect(await countTogether(poolA, limits)).toBeNull();
    await poolA.query(`DELETE FROM "ApiRateLimit" WHERE key LIKE 'tcrash%'`);
    expect(await countTogether(poolA, limits)).toBeNull();
    expect(await countTogether(poolA, limits)).toMatchObject({ index: 0 });
  });
});
