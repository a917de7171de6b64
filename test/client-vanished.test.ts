import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrisma } from "@/lib/db/client";
import { storeOf } from "@/lib/db/kysely";
import { claimDueRuns } from "@/lib/store/runs";
import { createTestDatabase, type TestDatabase } from "./db";
import { type SilentProxy, silentProxy } from "./silent-proxy";
import { runColumns } from "./rows";

// A worker whose host vanishes in the middle of a transaction (its VM gone, a partition) never tells the database:
// the server keeps the session, and the row locks of its open transaction, until its own TCP keepalive gives up —
// two hours and more by default. Claims skip locked rows, so the run that transaction had locked could not be
// claimed by any other worker meanwhile, whatever its lease said. The pool asks the server to end such a session.

let tdb: TestDatabase;
let proxy: SilentProxy;
beforeAll(async () => {
  tdb = await createTestDatabase();
  proxy = await silentProxy(new URL(tdb.url));
}, 60_000);
afterAll(async () => {
  await proxy?.close();
  await tdb?.drop();
});

describe("a worker whose host vanishes in the middle of a transaction", () => {
  it("leaves its run locked only until the server ends its idle transaction; then another worker claims it", async () => {
    const db = storeOf(tdb.prisma);
    const tenantId = (await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id;
    const conversation = await tdb.prisma.conversation.create({ data: { tenantId, tokenHash: "client-vanished" } });
    // A run the vanishing worker holds, its lease running out in a second.
    const run = await tdb.prisma.run.create({
      data: {
        tenantId,
        conversationId: conversation.id,
        ...runColumns,
        leaseOwner: "vanishing",
        leaseExpiresAt: new Date(Date.now() + 3_600_000), // set from the database's clock below
      },
    });
    expect(await claimDueRuns(db, "worker-b", 5000, 10)).toEqual([]); // nothing else is due in this database
    await sql`UPDATE "Run" SET "leaseExpiresAt" = now() + interval '1 second' WHERE id = ${run.id}`.execute(db);

    // The vanishing worker's transaction locks the run's row (as an effect's transaction does, renewing the lease),
    // then its host is gone before the next statement; the server ends the session once idle for 4 s.
    const worker = createPrisma(proxy.url, { max: 1, idleInTransactionMs: 4000 });
    let goOn!: () => void;
    const vanished = new Promise<void>((resolve) => (goOn = resolve));
    let locked!: () => void;
    const holding = new Promise<void>((resolve) => (locked = resolve));
    const transaction = storeOf(worker)
      .transaction()
      .execute(async (trx) => {
        await sql`UPDATE "Run" SET "leaseExpiresAt" = now() + interval '1 hour' WHERE id = ${run.id}`.execute(trx);
        locked();
        await vanished;
        await sql`SELECT 1`.execute(trx); // never reaches the server: the client's connection is gone
      })
      .catch((err: unknown) => err);
    await holding;
    proxy.vanishClients();

    // The lease ran out (its renewal was never committed); every claim skips the row while the dead transaction holds it.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await claimDueRuns(db, "worker-b", 5000, 10)).map((r) => r.id)).toEqual([]);
    const t0 = Date.now();
    let claimed: string[] = [];
    while (!claimed.length && Date.now() - t0 < 10_000) {
      await new Promise((r) => setTimeout(r, 200));
      claimed = (await claimDueRuns(db, "worker-b", 5000, 10)).map((r) => r.id);
    }
    expect(claimed).toEqual([run.id]);
    expect(Date.now() - t0).toBeLessThan(8000); // the session idle 4 s in its transaction, ended by the server

    // What the vanished transaction wrote never landed: the lease is worker-b's.
    const after = await db.selectFrom("Run").select("leaseOwner").where("id", "=", run.id).executeTakeFirstOrThrow();
    expect(after.leaseOwner).toBe(`worker-b:${run.id}`);
    goOn();
    expect(await transaction).toBeInstanceOf(Error);
    await worker.$disconnect();
  }, 30_000);

  it("asks the server to probe a silent client after 10 s and drop it after about 25 s", async () => {
    const pool = createPrisma(tdb.url, { max: 1 });
    try {
      const db = storeOf(pool);
      const show = async (name: string) => (await sql.raw<Record<string, string>>(`SHOW ${name}`).execute(db)).rows[0]![name];
      expect([await show("tcp_keepalives_idle"), await show("tcp_keepalives_interval"), await show("tcp_keepalives_count")]).toEqual([
        "10",
        "5",
        "3",
      ]);
      // By default: longer than a tool's body may keep an effect's transaction idle (SUPPORT_TOOL_TIMEOUT_MS, 15 s).
      expect(await show("idle_in_transaction_session_timeout")).toBe("45s");
    } finally {
      await pool.$disconnect();
    }
  });
});
