import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { staffRoute } from "@/lib/actions/safe-action";
import type { ApiDeps } from "@/lib/api/handler";
import { issueApiToken } from "@/lib/api/tokens";
import { createRuntime } from "@/lib/runtime/create-runtime";
import { chunkedBody } from "../widget-routes";
import { createTestDatabase, type TestDatabase } from "../db";
import { apiClient } from "./api-client";

// The JSON API and the console's route handlers read bodies as the widget does: at most 32 kB, declared or not (413),
// and a lone surrogate is a 400, never a 500 from the database.
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
  token = (
    await issueApiToken(tdb.prisma, { tenantId: acme.id, name: "bodies", scopes: ["handoffs:decide"], issuedBy: { operator: true } })
  ).token;
});
afterAll(async () => {
  await tdb.drop();
});

describe("/api/v1 bodies", () => {
  it("a chunked body is read only up to 32 kB, then 413 TOO_LARGE", async () => {
    const big = chunkedBody(2 * 1024 * 1024);
    const res = await call("POST", "/handoffs/nope/decision", { token, stream: big.stream });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("TOO_LARGE");
    expect(big.pulled()).toBeLessThan(40 * 1024);
  });

  it("a lone surrogate anywhere in the body is a 400", async () => {
    const res = await call("POST", "/handoffs/nope/decision", {
      token,
      rawBody: JSON.stringify({ decision: "deny", version: 1, actor: "raj@acme.test", reason: "no \udc00" }),
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "INVALID_INPUT", message: expect.stringMatching(/unpaired surrogate/) });
  });
});

describe("console route handlers", () => {
  // Bodies are read before the session is checked: refused as they come, the operation never runs.
  const route = staffRoute({ name: "bodyProbe", input: z.object({}).passthrough() }, async () => {
    throw new Error("the operation must not run");
  });

  it("a chunked body past 32 kB is a 413 without reading the rest", async () => {
    const big = chunkedBody(2 * 1024 * 1024);
    const req = new Request("http://localhost/api/console/probe", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: big.stream,
      duplex: "half",
    } as RequestInit);
    const res = await route(req);
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe("TOO_LARGE");
    expect(big.pulled()).toBeLessThan(40 * 1024);
  });

  it("a lone surrogate is a 400", async () => {
    const req = new Request("http://localhost/api/console/probe", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ note: "\ud800" }),
    });
    const res = await route(req);
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe("INVALID_INPUT");
  });
});
