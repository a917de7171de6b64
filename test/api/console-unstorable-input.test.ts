import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createTestDatabase, type TestDatabase } from "../db";

// A NUL (or a lone surrogate) PostgreSQL cannot store is refused with 400 INVALID_INPUT before any query by every
// server action and GET /api/console/runs/export (the staffAction chain), as by staffRoute and /api/v1 — never a
// 500 INTERNAL from the database with an error logged.
const session = vi.hoisted(() => ({ claims: null as null | { staffId: string; tenantId: string }, db: null as unknown }));
vi.mock("@/lib/auth/session", () => ({ getSessionClaims: async () => session.claims }));
vi.mock("@/lib/db/client", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@/lib/db/client")>()),
  getPrisma: async () => session.db,
}));

let tdb: TestDatabase;
const staffId: Record<string, { staffId: string; tenantId: string }> = {};
beforeAll(async () => {
  tdb = await createTestDatabase();
  session.db = tdb.prisma;
  for (const s of await tdb.prisma.staffUser.findMany()) staffId[s.email.split("@")[0]!] = { staffId: s.id, tenantId: s.tenantId };
});
afterAll(async () => {
  await tdb.drop();
});

describe("GET /api/console/runs/export", () => {
  it("?q=%00 is a 400 INVALID_INPUT, not a 500 INTERNAL", async () => {
    session.claims = staffId.sol!;
    const { GET } = await import("@/app/api/console/runs/export/route");
    const res = await GET(new Request("http://localhost/api/console/runs/export?format=jsonl&q=%00"));
    const body = await res.json();
    expect({ status: res.status, code: body.error?.code }).toEqual({ status: 400, code: "INVALID_INPUT" });
  });
});

describe("server actions", () => {
  it("a NUL in a text field is INVALID_INPUT, not INTERNAL", async () => {
    session.claims = staffId.ada!;
    const { createApiTokenAction } = await import("@/lib/actions/api-tokens");
    const res = await createApiTokenAction({ name: "help\u0000desk", scopes: ["runs:read"] });
    expect(res).toMatchObject({ ok: false, error: { code: "INVALID_INPUT" } });
  });
});
