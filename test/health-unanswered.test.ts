import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET as health } from "@/app/api/health/route";
import { disconnectPrisma, getPrisma } from "@/lib/db/client";
import { setDatabaseLogger } from "@/lib/db/outage";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { type SilentProxy, silentProxy } from "./silent-proxy";

// A database that stops answering without going away — its host vanished mid-query, a partition, a server frozen —
// refuses nothing: a query on a connection it held just waits. A health check that waited with it would never answer,
// and an orchestrator or load balancer would learn nothing but its own timeout. It answers 503 within its bound (4 s).

let db: TestDatabase;
let proxy: SilentProxy;
let savedUrl: string | undefined;
const logged: string[] = [];
let restoreLogger: ReturnType<typeof setDatabaseLogger>;

beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await silentProxy(new URL(db.url));
  savedUrl = process.env.DATABASE_URL;
  process.env.DATABASE_URL = proxy.url;
  await disconnectPrisma();
  restoreLogger = setDatabaseLogger((_level, line) => logged.push(line));
}, 60_000);
afterAll(async () => {
  setDatabaseLogger(restoreLogger);
  proxy?.cutSilent();
  await disconnectPrisma();
  if (savedUrl === undefined) delete process.env.DATABASE_URL;
  else process.env.DATABASE_URL = savedUrl;
  await proxy?.close();
  await db?.drop();
});

describe("the health check, when the database stops answering without closing", () => {
  it("answers 503 within its bound instead of waiting with the query, logs it once, and 200 once the database answers", async () => {
    await (await getPrisma()).tenant.count(); // the client made and connected: its making is not the database's answer
    expect((await health()).status).toBe(200);
    proxy.freeze(); // the pool's connections, and any it opens now
    logged.length = 0;

    for (let i = 0; i < 2; i++) {
      const t0 = Date.now();
      const res = await health();
      const ms = Date.now() - t0;
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ ok: false, database: "unavailable" });
      expect(ms).toBeGreaterThanOrEqual(3500);
      expect(ms).toBeLessThan(6000);
    }
    expect(logged.filter((l) => l.includes("database unavailable"))).toHaveLength(1);
    expect(logged[0]).toMatch(/database unavailable \(not answering\)/);

    // The silent connections are dropped at last (the server's or a firewall's doing): the queries waiting on them
    // fail, the pool opens new connections, and the check is healthy again by itself.
    proxy.cutSilent();
    const back = await health();
    expect(back.status).toBe(200);
    expect(logged.some((l) => /database back after/.test(l))).toBe(true);
  }, 30_000);
});
