// The measurements `npm run bench:peers` takes for every system (bench/peers/scenario.ts), on a real PostgreSQL:
// statements counted at the pg connection, commits and WAL between two marks, row versions a piece of work wrote.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  between,
  countStatements,
  coveredOutside,
  LOOKUP_ORDER_SQL,
  preparePeerShop,
  REFUND_SQL,
  roundTripTimes,
  writeMark,
  writtenSince,
} from "@/bench/peers/scenario";
import { createTestDatabase, type TestDatabase } from "./db";

let database: TestDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  database = await createTestDatabase({ seed: false });
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  await preparePeerShop(pool);
});

afterAll(async () => {
  await endAndWait(pool);
  await database.drop();
});

/**
 * `pool.end()` resolves once it has asked its connections to close (pg-pool), not once they have. The drop that
 * follows (WITH FORCE) terminated one still closing in a CI run: the server's FATAL reached the pool as an 'error'
 * nobody listened for, an uncaught exception. Wait for each connection's close first.
 */
async function endAndWait(p: pg.Pool): Promise<void> {
  let open = p.totalCount;
  const closed = new Promise<void>((resolve) => {
    if (open === 0) resolve();
    p.on("remove", () => {
      if (--open === 0) resolve();
    });
  });
  await p.end();
  await closed;
}

describe("bench:peers measurements", () => {
  it("counts every query that reaches a pg connection, pool and client alike, until restored", async () => {
    const counter = countStatements(pg.Client);
    try {
      await pool.query("SELECT 1");
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query(LOOKUP_ORDER_SQL, ["A-1001"]);
        await client.query("COMMIT");
      } finally {
        client.release();
      }
      expect(counter.count).toBe(4);
    } finally {
      counter.restore();
    }
    await pool.query("SELECT 1");
    expect(counter.count).toBe(4);
  });

  it("records each statement's wait while asked to, and measures the time they cover outside other spans", async () => {
    const counter = countStatements(pg.Client);
    try {
      await Promise.all([pool.query("SELECT 1"), pool.query("SELECT 1")]); // both connections open
      counter.spans = [];
      const t0 = performance.now();
      await Promise.all([pool.query("SELECT pg_sleep(0.2)"), pool.query("SELECT pg_sleep(0.1)")]);
      const t1 = performance.now();
      expect(counter.spans).toHaveLength(2);
      for (const [a, b] of counter.spans) {
        expect(a).toBeGreaterThanOrEqual(t0);
        expect(b).toBeLessThanOrEqual(t1);
      }
      // Each wait covers at least its sleep; the two run at once on the pool's two connections, and their overlap
      // counts once: the sum of both minus what they share.
      const [[a1, b1], [a2, b2]] = counter.spans as [[number, number], [number, number]];
      expect(Math.max(b1 - a1, b2 - a2)).toBeGreaterThanOrEqual(199);
      const shared = Math.max(0, Math.min(b1, b2) - Math.max(a1, a2));
      expect(shared).toBeGreaterThan(0);
      expect(coveredOutside(counter.spans, [], t0, t1)).toBeCloseTo(b1 - a1 + (b2 - a2) - shared, 6);
    } finally {
      counter.restore();
    }
    // Overlaps with what is excluded (a model call) and with the window's edges are taken off.
    expect(
      coveredOutside(
        [
          [0, 10],
          [5, 20],
          [30, 40],
        ],
        [[8, 12]],
        0,
        100,
      ),
    ).toBe(26);
    expect(
      coveredOutside(
        [
          [0, 10],
          [30, 40],
        ],
        [],
        5,
        35,
      ),
    ).toBe(10);
    expect(coveredOutside([[0, 10]], [[0, 10]], 0, 10)).toBe(0);
  });

  it("times each round trip from its first statement's sending to its last answer", async () => {
    const counter = countStatements(pg.Client);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      counter.sent = [];
      const t0 = performance.now();
      await client.query("SELECT pg_sleep(0.05)");
      // pg's pipeline mode: the second goes out while the first is unanswered, in its round trip.
      (client as unknown as { pipeline: boolean }).pipeline = true;
      await Promise.all([client.query("SELECT pg_sleep(0.03)"), client.query("SELECT 2")]);
      const t1 = performance.now();
      await client.query("SELECT 3");
      const trips = roundTripTimes(counter.sent, t1);
      expect(trips.map((t) => t.statements)).toEqual([["SELECT pg_sleep(0.05)"], ["SELECT pg_sleep(0.03)", "SELECT 2"]]);
      expect(trips[0]!.from).toBeGreaterThanOrEqual(t0);
      expect(trips[0]!.ms).toBeGreaterThanOrEqual(49);
      // The second trip lasts until its last answer, which came after the sleep.
      expect(trips[1]!.ms).toBeGreaterThanOrEqual(29);
      expect(trips[1]!.to).toBe(Math.max(...counter.sent.slice(1, 3).map((s) => s.answeredAt)));
      expect(trips[1]!.to).toBeLessThanOrEqual(t1);
      expect(roundTripTimes(counter.sent)).toHaveLength(3); // without a limit, the one sent after t1 too
    } finally {
      counter.restore();
      await client.end();
    }
  });

  // Transaction ids are the cluster's: other test files write to their own databases on the same server at the same
  // time, so one attempt may see their commits too. Someone else's commit only ever adds, so the least an attempt
  // counts is what the work itself committed; a read that wrote, or a refund in two commits, never gets there.
  const fewestCommits = async (expected: number, work: (attempt: number) => Promise<void>) => {
    let fewest = Number.POSITIVE_INFINITY;
    for (let attempt = 0; attempt < 25; attempt++) {
      const mark = await writeMark(pool);
      await work(attempt);
      fewest = Math.min(fewest, between(mark, await writeMark(pool)).commits);
      if (fewest <= expected) break; // tries again only while someone else's commit may have been counted
    }
    return fewest;
  };

  it("sees a read as nothing written, and a refund as one commit with the rows it inserted and updated", async () => {
    const beforeRead = await writeMark(pool);
    const { rows } = await pool.query(LOOKUP_ORDER_SQL, ["A-1002"]);
    expect(rows[0]).toMatchObject({ number: "A-1002", total_cents: 25000 });
    expect(await writtenSince(pool, beforeRead)).toEqual({ rows: 0, rowBytes: 0 });
    expect(await fewestCommits(0, async () => void (await pool.query(LOOKUP_ORDER_SQL, ["A-1002"])))).toBe(0);

    const mark = await writeMark(pool);
    await pool.query(REFUND_SQL, ["A-1002", 100, "call_1"]);
    const after = await writeMark(pool);
    expect(after.wal - mark.wal).toBeGreaterThan(0n);
    const written = await writtenSince(pool, mark);
    expect(written.rows).toBe(2); // the refunds row and the order's new version
    expect(written.rowBytes).toBeGreaterThan(50);
    expect(await fewestCommits(1, (n) => pool.query(REFUND_SQL, ["A-1002", 100, `call_${n + 2}`]).then(() => {}))).toBe(1);
  });
});
