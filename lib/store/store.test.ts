import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { createPrisma } from "@/lib/db/client";
import { type Store, storeOf } from "@/lib/db/kysely";
import { fenced, type Lease, LeaseLostError, withLease } from "./lease";
import { assertRunTransition, IllegalTransitionError, RUN_PHASES, RUN_TRANSITIONS, type RunPhase } from "./phases";
import { json, Statement } from "./statement";
import { runColumns } from "@/test/rows";

let tdb: TestDatabase;
let db: Store;
let tenantId: string;
let runId: string;
let conversationId: string;
beforeAll(async () => {
  tdb = await createTestDatabase();
  db = storeOf(tdb.prisma);
  tenantId = (await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id;
  const conversation = await tdb.prisma.conversation.create({ data: { tenantId, tokenHash: "store-test" } });
  conversationId = conversation.id;
  runId = (
    await tdb.prisma.run.create({
      data: {
        tenantId,
        conversationId,
        ...runColumns,
        leaseOwner: "owner-a",
        leaseExpiresAt: new Date(Date.now() + 60_000),
      },
    })
  ).id;
});
afterAll(async () => {
  await tdb.drop();
});

const eventsOfType = (type: string) => tdb.prisma.event.count({ where: { type } });

describe("the typed store reads and writes what Prisma does", () => {
  it("timestamps are UTC both ways, whatever the process's time zone; int8 comes back as bigint", async () => {
    const zone = process.env.TZ;
    process.env.TZ = "America/New_York";
    try {
      const at = new Date("2026-03-08T06:30:00.123Z"); // around a DST change in New York
      const { id } = await db
        .insertInto("Event")
        .values({ tenantId, type: "tz", data: "{}", createdAt: at })
        .returning("id")
        .executeTakeFirstOrThrow();
      expect(typeof id).toBe("bigint");
      const viaPrisma = await tdb.prisma.event.findUniqueOrThrow({ where: { id } });
      expect(viaPrisma.createdAt.toISOString()).toBe(at.toISOString());
      const viaStore = await db.selectFrom("Event").select("createdAt").where("id", "=", id).executeTakeFirstOrThrow();
      expect(viaStore.createdAt.toISOString()).toBe(at.toISOString());
    } finally {
      process.env.TZ = zone;
    }
  });

  it("a transaction commits together or not at all", async () => {
    await expect(
      db.transaction().execute(async (tx) => {
        await tx.insertInto("Event").values({ tenantId, type: "tx-rolled-back", data: "{}" }).execute();
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(await eventsOfType("tx-rolled-back")).toBe(0);
  });

  it("$disconnect ends a pool only the store used", async () => {
    const client = createPrisma(tdb.url, { max: 1 });
    await sql`SELECT 1`.execute(storeOf(client));
    await client.$disconnect();
    await expect(sql`SELECT 1`.execute(storeOf(client))).rejects.toThrow(/after calling end|ended/i);
  });
});

describe("statements", () => {
  it("objects and arrays must be given as json(…), never guessed", () => {
    const s = Statement.plain();
    expect(() => s.insert("e", "Event", { tenantId, type: "x", data: { a: 1 } })).toThrow(/json/);
    expect(() => s.insert("e", "Event", { tenantId, type: "x", data: json({ a: 1 }) })).not.toThrow();
  });

  it("a read-only CTE cannot carry a write", () => {
    const s = Statement.plain();
    expect(() => s.select("x", sql`DELETE FROM "Event"`)).toThrow(/insert\/update\/delete/);
  });

  it("writes the CTEs of one statement together", async () => {
    const s = Statement.plain();
    s.insert("a", "Event", { tenantId, type: "together", data: json({}) }, { returning: sql`id` });
    s.insert("b", "Event", { tenantId, type: "together", data: sql`jsonb_build_object('after', a.id)` }, { from: ["a"] });
    await s.run(db);
    expect(await eventsOfType("together")).toBe(2);
  });

  it("an insert's condition holds without sources too (it is never dropped)", async () => {
    const s = Statement.plain();
    s.insert("no", "Event", { tenantId, type: "conditional", data: json({}) }, { where: sql<boolean>`1 = 2` });
    s.insert("yes", "Event", { tenantId, type: "conditional", data: json({}) }, { where: sql<boolean>`1 = 1` });
    await s.run(db);
    expect(await eventsOfType("conditional")).toBe(1);
  });
});

describe("the fence", () => {
  const lease = (owner: string): Lease => ({ runId, owner, ms: 60_000 });

  it("a fenced statement with the lease held writes every part, and renews the lease", async () => {
    const before = (await tdb.prisma.run.findUniqueOrThrow({ where: { id: runId } })).leaseExpiresAt!;
    const s = fenced(lease("owner-a"), { counters: { turns: 1 } });
    s.insert("e", "Event", { tenantId, type: "fenced-held", data: json({}) });
    s.update("c", "Conversation", { updatedAt: sql`now()` }, sql<boolean>`"Conversation".id = ${conversationId}`);
    await s.run(db);
    expect(await eventsOfType("fenced-held")).toBe(1);
    const run = await tdb.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(run.turnsUsed).toBe(1);
    expect(run.leaseExpiresAt!.getTime()).toBeGreaterThanOrEqual(before.getTime());
  });

  it("a fenced write with a lost lease writes nothing — no part of it, not the counters — and says so", async () => {
    const s = fenced(lease("owner-b"), { counters: { turns: 1 } });
    s.insert("e", "Event", { tenantId, type: "fenced-lost", data: json({}) });
    s.update("c", "Conversation", { messageCount: sql`"messageCount" + 100` }, sql<boolean>`"Conversation".id = ${conversationId}`);
    s.delete("d", "Event", sql<boolean>`"Event".type = 'fenced-held'`);
    await expect(s.run(db)).rejects.toBeInstanceOf(LeaseLostError);
    expect(await eventsOfType("fenced-lost")).toBe(0);
    expect(await eventsOfType("fenced-held")).toBe(1);
    expect((await tdb.prisma.conversation.findUniqueOrThrow({ where: { id: conversationId } })).messageCount).toBe(0);
    expect((await tdb.prisma.run.findUniqueOrThrow({ where: { id: runId } })).turnsUsed).toBe(1);
  });

  it("a transaction under a lost lease runs nothing", async () => {
    let ran = false;
    await expect(
      withLease(db, lease("owner-b"), {}, async () => {
        ran = true;
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(ran).toBe(false);
  });

  it("a fenced transaction's last statement can take its COMMIT: all of the transaction stands, and nothing more is sent on it", async () => {
    const row = await withLease(db, lease("owner-a"), {}, async (tx) => {
      await tx.insertInto("Event").values({ tenantId, type: "tx-commit-with-first", data: "{}" }).execute();
      const s = fenced(lease("owner-a"), { counters: { turns: 1 } });
      s.insert("e", "Event", { tenantId, type: "tx-commit-with-last", data: json({}) }, { returning: sql`id` });
      const last = await s.runThenCommit<{ seen: number }>(tx, sql`(SELECT count(*)::int FROM e) AS seen`);
      await expect(tx.selectFrom("Event").select("id").execute()).rejects.toThrow(/already ended/);
      return last;
    });
    expect(row).toEqual({ seen: 1 });
    expect(await eventsOfType("tx-commit-with-first")).toBe(1);
    expect(await eventsOfType("tx-commit-with-last")).toBe(1);
    expect((await tdb.prisma.run.findUniqueOrThrow({ where: { id: runId } })).turnsUsed).toBe(2);
  });

  it("a fenced statement that takes the COMMIT under a lease not held fails, and nothing of its transaction stands", async () => {
    // withLease locked the run for owner-a; a statement fenced by another owner's lease (a bug, by construction)
    // must not commit what the transaction did before it.
    await expect(
      withLease(db, lease("owner-a"), { turns: 1 }, async (tx) => {
        await tx.insertInto("Event").values({ tenantId, type: "tx-lost-first", data: "{}" }).execute();
        const s = fenced(lease("owner-c"));
        s.insert("e", "Event", { tenantId, type: "tx-lost-last", data: json({}) });
        await s.runThenCommit(tx);
      }),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(await eventsOfType("tx-lost-first")).toBe(0);
    expect(await eventsOfType("tx-lost-last")).toBe(0);
    expect((await tdb.prisma.run.findUniqueOrThrow({ where: { id: runId } })).turnsUsed).toBe(2);
  });

  it("a phase change goes through the transition table, and an illegal one is refused before anything is written", async () => {
    expect(() => fenced(lease("owner-a"), { transition: { to: "RUNNING", release: false } })).toThrow(IllegalTransitionError);
    const s = fenced(lease("owner-a"), { transition: { to: "WAITING_FOR_RETRY", release: true, nextAttemptAt: new Date() } });
    await s.run(db);
    const run = await tdb.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(run.phase).toBe("WAITING_FOR_RETRY");
    expect(run.leaseOwner).toBeNull();
    // The lease was let go: the same owner can no longer write.
    await expect(fenced(lease("owner-a")).run(db)).rejects.toBeInstanceOf(LeaseLostError);
  });
});

describe("the run's lifecycle", () => {
  const cases: Array<[RunPhase, RunPhase, boolean]> = RUN_PHASES.flatMap((from) =>
    RUN_PHASES.map((to): [RunPhase, RunPhase, boolean] => [from, to, RUN_TRANSITIONS[from].includes(to)]),
  );
  it.each(cases)("%s → %s allowed: %s", (from, to, allowed) => {
    if (allowed) expect(() => assertRunTransition(from, to)).not.toThrow();
    else expect(() => assertRunTransition(from, to)).toThrow(IllegalTransitionError);
  });

  it("a finished run never moves again, and parking only ever resumes to RUNNING", () => {
    for (const end of ["COMPLETED", "ESCALATED"] as const) expect(RUN_TRANSITIONS[end]).toEqual([]);
    expect(RUN_TRANSITIONS.WAITING_FOR_APPROVAL).toEqual(["RUNNING"]);
  });
});
