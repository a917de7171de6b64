import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiDeps } from "@/lib/api/handler";
import { API_SCOPES } from "@/lib/api/scopes";
import { issueApiToken } from "@/lib/api/tokens";
import { createRuntime } from "@/lib/runtime/create-runtime";
import { createTestDatabase, type TestDatabase } from "../db";
import { apiClient } from "./api-client";

// /api/v1 list filters and cursors: a date the schema accepts but PostgreSQL cannot hold (year 0000, or a forged cursor
// with a year far outside timestamp's range) must be a 400 INVALID_INPUT, not a 500 INTERNAL from the database.
let tdb: TestDatabase;
let call: ReturnType<typeof apiClient>;
let token: string;
beforeAll(async () => {
  tdb = await createTestDatabase();
  const deps: ApiDeps = {
    getDb: async () => tdb.prisma,
    getRuntime: () => createRuntime({ db: tdb.prisma }),
    rateLimit: () => ({ points: 1000, windowSeconds: 60 }),
  };
  call = apiClient(deps);
  const acme = await tdb.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  token = (await issueApiToken(tdb.prisma, { tenantId: acme.id, name: "dates", scopes: [...API_SCOPES], issuedBy: { operator: true } }))
    .token;
});
afterAll(async () => {
  await tdb.drop();
});

describe("out-of-range dates in list queries", () => {
  it.each(["/handoffs", "/conversations"])("%s?since=0000-01-01T00:00:00Z is a 400, not a 500", async (path) => {
    // "since the beginning of time": a valid ISO 8601 string the documented `since` accepts.
    const res = await call("GET", `${path}?since=${encodeURIComponent("0000-01-01T00:00:00Z")}`, { token });
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: "INVALID_INPUT" });
  });

  it.each(["/handoffs", "/conversations"])("%s with a forged cursor dated year -100000 is a 400, not a 500", async (path) => {
    const cursor = Buffer.from("-100000-01-01T00:00:00.000Z|abc", "utf8").toString("base64url");
    const res = await call("GET", `${path}?cursor=${cursor}`, { token });
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: "INVALID_INPUT" });
  });
});
