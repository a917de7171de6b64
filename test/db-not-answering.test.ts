import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createPrisma, disconnectPrisma, type PrismaClient } from "@/lib/db/client";
import { storeOf } from "@/lib/db/kysely";
import { connectivityFailureKind, setDatabaseLogger } from "@/lib/db/outage";
import { createModelClient } from "@/lib/model/client";
import { createOfflineFetch } from "@/lib/model/offline";
import { runWorkerOnce } from "@/lib/runtime/worker";
import { type SilentProxy, silentProxy } from "./silent-proxy";
import { afterCallbacks, runAfterCallbacks, type WidgetRoutes, widgetRoutes } from "./widget-routes";

vi.mock("next/server", async (original) => ({
  ...(await original<typeof import("next/server")>()),
  after: (fn: () => unknown) => afterCallbacks.push(fn),
}));

// A database that stops answering without closing its connections — its host vanished, a partition, a frozen
// server — refuses nothing: a query on a connection it held waits until TCP gives up (keepalive: about 11 minutes),
// and the request, worker pass or run waiting on it with it. The pool bounds the wait (SUPPORT_DB_ANSWER_MS): past
// it the connection is closed, the query fails as "not answering", and nothing of its transaction lands.

let w: WidgetRoutes;
let proxy: SilentProxy;
let savedUrl: string | undefined;
const logged: string[] = [];
let restoreLogger: ReturnType<typeof setDatabaseLogger>;

beforeAll(async () => {
  savedUrl = process.env.DATABASE_URL;
  w = await widgetRoutes();
  proxy = await silentProxy(new URL(w.tdb.url));
  // The process-wide client (the widget's routes) goes through the proxy, with a bound of 1.5 s.
  process.env.DATABASE_URL = proxy.url;
  vi.stubEnv("SUPPORT_DB_ANSWER_MS", "1500");
  await disconnectPrisma();
  restoreLogger = setDatabaseLogger((_level, line) => logged.push(line));
}, 60_000);
afterAll(async () => {
  setDatabaseLogger(restoreLogger);
  proxy?.cutSilent();
  await runAfterCallbacks();
  await w?.close();
  vi.unstubAllEnvs();
  if (savedUrl === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = savedUrl;
  await proxy?.close();
});

/** What `work` came to within `ms` (or that it was still waiting: the failure this file is about). */
async function within<T>(work: Promise<T>, ms: number) {
  const t0 = Date.now();
  const waiting = Symbol("still waiting");
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    work.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    new Promise<typeof waiting>((resolve) => (timer = setTimeout(() => resolve(waiting), ms))),
  ]);
  clearTimeout(timer);
  if (outcome === waiting) throw new Error(`still waiting for the database after ${ms} ms`);
  return { ...outcome, ms: Date.now() - t0 } as { value?: T; error?: unknown; ms: number };
}

describe("a database that stops answering without closing", () => {
  it("a transaction's query fails within the bound, its connection is dropped, and nothing of it lands", async () => {
    const db: PrismaClient = createPrisma(proxy.url, { max: 2, answerWithinMs: 1000 });
    try {
      const store = storeOf(db);
      await sql`CREATE TABLE answer_probe (id int)`.execute(store);
      const before = proxy.connections();
      const tx = store.transaction().execute(async (trx) => {
        await sql`INSERT INTO answer_probe VALUES (1)`.execute(trx);
        proxy.silence(); // the connections open now: this transaction's among them
        await sql`SELECT 1`.execute(trx);
      });
      const { error, ms } = await within(tx, 10_000);
      expect(connectivityFailureKind(error)).toBe("not answering");
      expect(String((error as Error).message)).toMatch(/the database did not answer within 1 s/);
      expect(ms).toBeGreaterThanOrEqual(900);
      expect(ms).toBeLessThan(4000);

      // The pool answers again at once, on a new connection (the silent one is never handed out again), and the
      // insert was never committed.
      const { value } = await within(sql<{ n: number }>`SELECT count(*)::int AS n FROM answer_probe`.execute(store), 5000);
      expect(value!.rows[0]!.n).toBe(0);
      expect(proxy.connections()).toBeGreaterThan(before);
    } finally {
      proxy.cutSilent();
      await db.$disconnect();
    }
  });

  it("a worker's pass fails within the bound instead of waiting, and the next pass goes on once it answers", async () => {
    const db: PrismaClient = createPrisma(proxy.url, { max: 1, answerWithinMs: 1000 });
    const deps = { db, model: createModelClient({ fetch: createOfflineFetch() }), workerId: "worker-silenced", leaseMs: 5000 };
    try {
      await runWorkerOnce(deps); // the pool's one connection is open
      proxy.silence();
      const { error, ms } = await within(runWorkerOnce(deps), 10_000);
      expect(connectivityFailureKind(error)).toBe("not answering");
      expect(ms).toBeLessThan(4000);
      proxy.cutSilent();
      const { value } = await within(runWorkerOnce(deps), 10_000);
      expect(value).toMatchObject({ advanced: 0, expired: 0 });
    } finally {
      proxy.cutSilent();
      await db.$disconnect();
    }
  });

  it("a customer's message while it gives no answer: 503 within seconds, told once; once it answers, nothing is lost", async () => {
    const start = await w.start({ ip: "198.51.100.20" });
    const token = start.body.token as string;
    expect((await w.send(token, { text: "Where is my order A-1001?" }, { ip: "198.51.100.20" })).status).toBe(202);
    await runAfterCallbacks(); // the agent answers

    proxy.freeze(); // every connection, open now or opened later
    logged.length = 0;
    for (const text of ["Hello?", "Anyone there?"]) {
      const { value, ms } = await within(w.send(token, { text }, { ip: "198.51.100.20" }), 15_000);
      expect(value!.status).toBe(503);
      expect(value!.body).toMatchObject({ code: "UNAVAILABLE" });
      expect(ms).toBeLessThan(10_000); // an idle connection's bound (1.5 s), or a new connection's (5 s)
    }
    const told = logged.filter((l) => l.includes("database unavailable"));
    expect(told.length).toBeGreaterThanOrEqual(1);
    expect(told.join("\n")).toMatch(/database unavailable \(not answering\)/);
    expect(new Set(told).size).toBe(told.length); // once per kind

    // The silent connections are dropped at last: the next message goes through and is answered; the two refused
    // ones were not stored, and nothing else was lost or doubled.
    proxy.cutSilent();
    expect((await w.send(token, { text: "Is A-1002 on its way?" }, { ip: "198.51.100.20" })).status).toBe(202);
    await runAfterCallbacks();
    const view = (await w.view(token)).body.view as { messages: { from: string; text: string }[] };
    const customer = view.messages.filter((m) => m.from === "customer").map((m) => m.text);
    expect(customer).toEqual(["Where is my order A-1001?", "Is A-1002 on its way?"]);
    expect(view.messages.filter((m) => m.from === "agent").length).toBeGreaterThanOrEqual(2);
    expect(logged.some((l) => /database back after/.test(l))).toBe(true);
  }, 60_000);
});
