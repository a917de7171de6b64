import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueApiToken } from "@/lib/api/tokens";
import type { ApiDeps } from "@/lib/api/handler";
import { createPrisma } from "@/lib/db/client";
import { createRuntime } from "@/lib/runtime/create-runtime";
import { createTestDatabase, type TestDatabase } from "../db";
import { apiClient } from "./api-client";

// The limit is per token and counted in PostgreSQL: two web processes (here two clients, each with its own pool and
// its own limiter) share one budget.
let tdb: TestDatabase;
let second: TestDatabase["prisma"];
beforeAll(async () => {
  tdb = await createTestDatabase();
  second = createPrisma(tdb.url, { max: 2 });
});
afterAll(async () => {
  await second.$disconnect();
  await tdb.drop();
});

function client(db: TestDatabase["prisma"], points: number) {
  const deps: ApiDeps = {
    getDb: async () => db,
    getRuntime: () => createRuntime({ db }),
    rateLimit: () => ({ points, windowSeconds: 60 }),
  };
  return apiClient(deps);
}

async function newToken(name: string) {
  const acme = await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  return (await issueApiToken(tdb.prisma, { tenantId: acme.id, name, scopes: ["handoffs:read"], issuedBy: { operator: true } })).token;
}

describe("rate limit per token", () => {
  it("counts across processes: past the limit, 429 RATE_LIMITED with Retry-After; other tokens are unaffected", async () => {
    const token = await newToken("busy");
    const a = client(tdb.prisma, 4);
    const b = client(second, 4);
    const answers = [];
    for (const call of [a, b, a, b]) answers.push(await call("GET", "/handoffs", { token }));
    expect(answers.map((x) => x.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((x) => x.headers.get("ratelimit-remaining"))).toEqual(["3", "2", "1", "0"]);
    expect(answers[0]!.headers.get("ratelimit-limit")).toBe("4");

    // The fifth request, in either process, is refused.
    for (const call of [b, a, b]) {
      const refused = await call("GET", "/handoffs", { token });
      expect(refused.status).toBe(429);
      expect(refused.body.error).toMatchObject({ code: "RATE_LIMITED", details: { limit: 4, windowSeconds: 60 } });
      const retryAfter = Number(refused.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Every answer to a valid token carries the three RateLimit headers (README), the refusal too.
      expect({
        limit: refused.headers.get("ratelimit-limit"),
        remaining: refused.headers.get("ratelimit-remaining"),
        reset: refused.headers.get("ratelimit-reset"),
      }).toEqual({ limit: "4", remaining: "0", reset: String(retryAfter) });
    }
    // The counter lives in the database, under the token's id.
    const row = await tdb.prisma.apiRateLimit.findFirstOrThrow({
      where: { key: { endsWith: (await tdb.prisma.apiToken.findFirstOrThrow({ where: { name: "busy" } })).id } },
    });
    expect(row.points).toBeGreaterThanOrEqual(5);

    const other = await newToken("quiet");
    expect((await a("GET", "/handoffs", { token: other })).status).toBe(200);
  });

  it("starts again in the next window", async () => {
    const token = await newToken("windowed");
    const id = (await tdb.prisma.apiToken.findFirstOrThrow({ where: { name: "windowed" } })).id;
    const call = client(second, 2);
    expect((await call("GET", "/handoffs", { token })).status).toBe(200);
    expect((await call("GET", "/handoffs", { token })).status).toBe(200);
    // A new limiter (a fresh process) sees the database's count: still over.
    expect((await client(tdb.prisma, 2)("GET", "/handoffs", { token })).status).toBe(429);
    // Move the window's end into the past, as time would (in the process that was not refused: the refusing one
    // also remembers the block in memory until the window it saw ends).
    await tdb.prisma.apiRateLimit.updateMany({ where: { key: { endsWith: id } }, data: { expire: BigInt(Date.now() - 1000) } });
    const fresh = await call("GET", "/handoffs", { token });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get("ratelimit-remaining")).toBe("1");
  });

  it("does not count requests without a valid token against anyone", async () => {
    const call = client(tdb.prisma, 1);
    for (let i = 0; i < 3; i++) expect((await call("GET", "/handoffs", { token: `sa_live_${"z".repeat(40)}` })).status).toBe(401);
    expect((await call("GET", "/handoffs", { token: await newToken("fresh") })).status).toBe(200);
  });
});
