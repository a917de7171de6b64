// The runtime's driver (lib/db/kysely): a transaction's BEGIN goes on the wire with its first statement — one round
// trip for both — and the transaction is exactly as atomic as with BEGIN sent apart.
import net from "node:net";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { countStatements } from "@/bench/peers/scenario";
import { poolOf } from "@/lib/db/sql";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { commitThenRead, DeferredWriteError, type Store, sendTogether, sendWithNext, storeOf } from "./kysely";

let tdb: TestDatabase;
let db: Store;
beforeAll(async () => {
  tdb = await createTestDatabase({ seed: false });
  db = storeOf(tdb.prisma);
  await sql`CREATE TABLE probe (id int PRIMARY KEY, note text NOT NULL)`.execute(db);
});
afterAll(async () => {
  await tdb.drop();
});

/** Writes to any socket of this process (each one a system call, and on loopback a segment the server reads). */
function countSocketWrites() {
  const proto = net.Socket.prototype as unknown as Record<"_write" | "_writev", (...args: unknown[]) => unknown>;
  const spies = (["_write", "_writev"] as const).map((m) => vi.spyOn(proto, m));
  let count = 0;
  return {
    get count() {
      return count;
    },
    restore: () => {
      count = spies.reduce((n, s) => n + s.mock.calls.length, 0); // read before the restore clears the calls
      for (const s of spies) s.mockRestore();
    },
  };
}

const ids = async () => (await sql<{ id: number }>`SELECT id FROM probe ORDER BY id`.execute(db)).rows.map((r) => r.id);
const insert = (tx: Store, id: number, note: string | null = "x") => sql`INSERT INTO probe (id, note) VALUES (${id}, ${note})`.execute(tx);

describe("transactions through the driver", () => {
  it("send BEGIN with the first statement: two statements and COMMIT in three round trips", async () => {
    const counter = countStatements(pg.Client);
    try {
      await db.transaction().execute(async (tx) => {
        await insert(tx, 1);
        await insert(tx, 2);
      });
    } finally {
      counter.restore();
    }
    expect(counter.count).toBe(4); // BEGIN, two INSERTs, COMMIT
    expect(counter.roundTrips).toBe(3);
    expect(await ids()).toEqual([1, 2]);
    await sql`DELETE FROM probe`.execute(db);
  });

  it("a transaction that sends nothing sends no BEGIN and no COMMIT", async () => {
    const counter = countStatements(pg.Client);
    try {
      expect(await db.transaction().execute(async () => 42)).toBe(42);
    } finally {
      counter.restore();
    }
    expect(counter.count).toBe(0);
  });

  it("a failing first statement (sent with BEGIN) leaves nothing, and the connection serves the next query", async () => {
    await expect(
      db.transaction().execute(async (tx) => {
        await insert(tx, 3, null); // NOT NULL violated
      }),
    ).rejects.toThrow(/null value/);
    await expect(
      db.transaction().execute(async (tx) => {
        await insert(tx, 4);
        await insert(tx, 4); // duplicate key: the first insert is rolled back with it
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await ids()).toEqual([]);
    // Every connection of the pool still answers, outside and inside transactions.
    for (let i = 0; i < 6; i++) await db.transaction().execute((tx) => insert(tx, 10 + i));
    expect(await ids()).toEqual([10, 11, 12, 13, 14, 15]);
    await sql`DELETE FROM probe`.execute(db);
  });

  it("a rollback undoes every statement, the first (sent with BEGIN) included; statements started at once in a transaction run in it", async () => {
    await expect(
      db.transaction().execute(async (tx) => {
        await Promise.all([insert(tx, 20), insert(tx, 21), insert(tx, 22)]);
        expect((await sql<{ n: number }>`SELECT count(*)::int AS n FROM probe`.execute(tx)).rows[0]!.n).toBe(3);
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    expect(await ids()).toEqual([]);
  });

  it("gives connections back to the pool out of pipeline mode (Prisma's queries on the same pool stay as they were)", async () => {
    await db.transaction().execute((tx) => insert(tx, 30));
    const pool = poolOf(tdb.prisma)!;
    const clients = await Promise.all(Array.from({ length: 4 }, () => pool.connect()));
    try {
      for (const c of clients) expect((c as pg.PoolClient & { pipeline: boolean }).pipeline).toBe(false);
    } finally {
      for (const c of clients) c.release();
    }
    expect(await tdb.prisma.$queryRaw<Array<{ n: number }>>`SELECT count(*)::int AS n FROM probe`).toEqual([{ n: 1 }]);
    await sql`DELETE FROM probe`.execute(db);
  });
});

describe("sendTogether", () => {
  it("sends BEGIN, the statements and COMMIT in one round trip; each statement answers apart; the commit stands", async () => {
    const counter = countStatements(pg.Client);
    let answers: Array<{ rows: Array<Record<string, unknown>> }> = [];
    try {
      await db.transaction().execute(async (tx) => {
        answers = await sendTogether(
          tx,
          [sql`INSERT INTO probe (id, note) VALUES (40, 'a') RETURNING id`, sql`SELECT count(*)::int AS n FROM probe`],
          {
            commit: true,
          },
        );
      });
    } finally {
      counter.restore();
    }
    expect(answers.map((a) => a.rows)).toEqual([[{ id: 40 }], [{ n: 1 }]]); // the second ran after the first
    expect(counter.count).toBe(4); // BEGIN, two statements, COMMIT — Kysely's own COMMIT is not sent again
    expect(counter.roundTrips).toBe(1);
    expect(await ids()).toEqual([40]);
    await sql`DELETE FROM probe`.execute(db);
  });

  it("a failing statement among them: its error is thrown, and COMMIT commits nothing of the transaction", async () => {
    await expect(
      db.transaction().execute(async (tx) => {
        await insert(tx, 50);
        await sendTogether(tx, [sql`INSERT INTO probe (id, note) VALUES (51, 'b')`, sql`INSERT INTO probe (id, note) VALUES (50, 'dup')`], {
          commit: true,
        });
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await ids()).toEqual([]);
    await db.transaction().execute((tx) => insert(tx, 52)); // the connection is fine afterwards
    expect(await ids()).toEqual([52]);
    await sql`DELETE FROM probe`.execute(db);
  });

  it("refuses a statement after the COMMIT that went with the last ones, and COMMIT outside a transaction", async () => {
    await expect(
      db.transaction().execute(async (tx) => {
        await sendTogether(tx, [sql`INSERT INTO probe (id, note) VALUES (60, 'c')`], { commit: true });
        await insert(tx, 61); // would run outside any transaction
      }),
    ).rejects.toThrow(/already ended/);
    expect(await ids()).toEqual([60]); // committed with its statement: what followed was refused, not rolled into it
    await expect(sendTogether(db, [sql`SELECT 1`], { commit: true })).rejects.toThrow(/only ends a transaction/);
    await sql`DELETE FROM probe`.execute(db);
  });

  it("a transaction aborted by an earlier statement whose error was caught: what goes with COMMIT is refused, nothing is committed", async () => {
    await expect(
      db.transaction().execute(async (tx) => {
        await insert(tx, 80);
        await insert(tx, 80).catch(() => undefined); // the transaction is aborted from here on
        await sendTogether(tx, [sql`SELECT 1`], { commit: true }).catch((err) => {
          throw new Error(`refused: ${(err as Error).message}`);
        });
      }),
    ).rejects.toThrow(/refused: .*(aborted|current transaction)/);
    expect(await ids()).toEqual([]);
  });

  it("works when the driver and the caller come from two copies of the module (a built app has one per route)", async () => {
    vi.resetModules();
    const copy = await import("./kysely");
    expect(copy.sendTogether).not.toBe(sendTogether); // a second copy indeed
    const answers = await db
      .transaction()
      .execute((tx) => copy.sendTogether(tx, [sql`SELECT 1 AS a`, sql`SELECT 2 AS b`], { commit: true }));
    expect(answers.map((a) => a.rows)).toEqual([[{ a: 1 }], [{ b: 2 }]]);
  });

  it("commitThenRead: reads sent behind the COMMIT, in the same round trip and the same write, see what it committed; a failed read answers null", async () => {
    const counter = countStatements(pg.Client);
    // BEGIN, the statement, COMMIT and the reads leave in ONE write to the socket: written apart, each is a system
    // call here and a TCP segment of its own (pg turns Nagle off) for the server to read.
    const writes = countSocketWrites();
    let sent: Awaited<ReturnType<typeof commitThenRead>> | undefined;
    try {
      sent = await db
        .transaction()
        .execute((tx) =>
          commitThenRead(
            tx,
            [sql`INSERT INTO probe (id, note) VALUES (90, 'e') RETURNING id`],
            [tx.selectFrom("probe" as never).select(sql`count(*)::int`.as("n")), sql`SELECT 1 / 0 AS broken`, sql`SELECT 'after' AS x`],
          ),
        );
    } finally {
      counter.restore();
      writes.restore();
    }
    expect(sent!.answers.map((a) => a.rows)).toEqual([[{ id: 90 }]]);
    expect(sent!.reads.map((r) => r?.rows ?? null)).toEqual([[{ n: 1 }], null, [{ x: "after" }]]);
    expect(counter.roundTrips).toBe(1);
    expect(writes.count).toBe(1);
    expect(await ids()).toEqual([90]); // the failed read changed nothing of the commit
    await sql`DELETE FROM probe`.execute(db);
  });

  it("commitThenRead: a failing statement is thrown and nothing is committed", async () => {
    await expect(
      db.transaction().execute(async (tx) => {
        await insert(tx, 95);
        await commitThenRead(tx, [sql`INSERT INTO probe (id, note) VALUES (95, 'dup')`], [sql`SELECT 1 AS one`]);
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await ids()).toEqual([]);
  });

  it("without a transaction: the statements in one round trip, each in its own (a failure does not undo the others)", async () => {
    const counter = countStatements(pg.Client);
    try {
      await expect(
        sendTogether(db, [sql`INSERT INTO probe (id, note) VALUES (70, 'd')`, sql`INSERT INTO probe (id, note) VALUES (70, 'dup')`]),
      ).rejects.toThrow(/duplicate key/);
    } finally {
      counter.restore();
    }
    expect(counter.roundTrips).toBe(1);
    expect(await ids()).toEqual([70]);
    await sql`DELETE FROM probe`.execute(db);
  });
});

describe("sendWithNext", () => {
  const counted = async <T>(work: () => Promise<T>) => {
    const counter = countStatements(pg.Client);
    try {
      return { result: await work(), count: counter.count, roundTrips: counter.roundTrips };
    } finally {
      counter.restore();
    }
  };

  it("a deferred write goes in the round trip of the transaction's next statement, which sees it", async () => {
    const { result, count, roundTrips } = await counted(() =>
      db.transaction().execute(async (tx) => {
        await insert(tx, 80); // BEGIN goes with it
        await sendWithNext(tx, sql`INSERT INTO probe (id, note) VALUES (81, 'deferred')`);
        return (await sql<{ n: number }>`SELECT count(*)::int AS n FROM probe WHERE id = 81`.execute(tx)).rows[0]!.n;
      }),
    );
    expect(result).toBe(1);
    expect(count).toBe(5); // BEGIN, INSERT 80, INSERT 81, SELECT, COMMIT
    expect(roundTrips).toBe(3); // BEGIN + 80; 81 + SELECT; COMMIT
    expect(await ids()).toEqual([80, 81]);
    await sql`DELETE FROM probe`.execute(db);
  });

  it("with nothing sent after it, the write goes with the COMMIT; with sendTogether's COMMIT, ahead of its statements", async () => {
    const alone = await counted(() =>
      db.transaction().execute(async (tx) => {
        await sendWithNext(tx, sql`INSERT INTO probe (id, note) VALUES (82, 'deferred')`);
      }),
    );
    expect(alone.roundTrips).toBe(1); // BEGIN, the write and COMMIT at once
    const together = await counted(() =>
      db.transaction().execute(async (tx) => {
        await sendWithNext(tx, sql`INSERT INTO probe (id, note) VALUES (83, 'deferred')`);
        const [answer] = await sendTogether<{ n: number }>(tx, [sql`SELECT count(*)::int AS n FROM probe WHERE id >= 82`], {
          commit: true,
        });
        return answer!.rows[0]!.n;
      }),
    );
    expect(together.result).toBe(2); // the statement's own answer, not the deferred write's
    expect(together.roundTrips).toBe(1);
    expect(await ids()).toEqual([82, 83]);
    await sql`DELETE FROM probe`.execute(db);
  });

  it("a transaction that rolls back never sends the write", async () => {
    const { count } = await counted(() =>
      db
        .transaction()
        .execute(async (tx) => {
          await insert(tx, 84);
          await sendWithNext(tx, sql`INSERT INTO probe (id, note) VALUES (85, 'deferred')`);
          throw new Error("changed my mind");
        })
        .catch((err: Error) => err.message),
    );
    expect(count).toBe(3); // BEGIN, INSERT 84, ROLLBACK
    expect(await ids()).toEqual([]);
  });

  it("a failing deferred write fails the next send with a DeferredWriteError (code kept) and nothing is committed", async () => {
    await insert(db, 86);
    const failed = await db
      .transaction()
      .execute(async (tx) => {
        await insert(tx, 87);
        await sendWithNext(tx, sql`INSERT INTO probe (id, note) VALUES (86, 'dup')`);
        await sendTogether(tx, [sql`INSERT INTO probe (id, note) VALUES (88, 'x')`], { commit: true });
      })
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(DeferredWriteError);
    expect((failed as DeferredWriteError).code).toBe("23505");
    expect((failed as DeferredWriteError).message).toMatch(/duplicate key/);
    expect(await ids()).toEqual([86]);
    await sql`DELETE FROM probe`.execute(db);
  });

  it("only inside a transaction, and not after its COMMIT", async () => {
    await expect(sendWithNext(db, sql`INSERT INTO probe (id, note) VALUES (89, 'x')`)).rejects.toThrow(/only inside a transaction/);
    await expect(
      db.transaction().execute(async (tx) => {
        await sendTogether(tx, [sql`SELECT 1`], { commit: true });
        await sendWithNext(tx, sql`INSERT INTO probe (id, note) VALUES (89, 'x')`);
      }),
    ).rejects.toThrow(/already ended/);
    expect(await ids()).toEqual([]);
  });
});
