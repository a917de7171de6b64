import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createShopApiToken, revokeShopApiToken, shopApiTokens } from "@/lib/console/api-tokens";
import { AppError } from "@/lib/errors";
import { verifyApiToken } from "@/lib/api/tokens";
import { createTestDatabase, type TestDatabase } from "../db";

// Settings → API tokens: admins only, in the data layer and in the server actions' chain. The actions run with the
// session resolved to a chosen staff member of the test database (what the session cookie would resolve to).
const session = vi.hoisted(() => ({ claims: null as null | { staffId: string; tenantId: string }, db: null as unknown }));
vi.mock("@/lib/auth/session", () => ({ getSessionClaims: async () => session.claims }));
vi.mock("@/lib/db/client", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@/lib/db/client")>()),
  getPrisma: async () => session.db,
}));

let tdb: TestDatabase;
type Staff = { staffId: string; tenantId: string; email: string; role: "reviewer" | "supervisor" | "admin" };
const staff: Record<string, Staff> = {};
beforeAll(async () => {
  tdb = await createTestDatabase();
  session.db = tdb.prisma;
  for (const s of await tdb.prisma.staffUser.findMany()) {
    staff[s.email.split("@")[0]!] = { staffId: s.id, tenantId: s.tenantId, email: s.email, role: s.role };
  }
});
afterAll(async () => {
  await tdb.drop();
});

async function code(p: Promise<unknown>) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return (err as AppError).code;
}

describe("API tokens in the data layer", () => {
  it("refuses reviewers and supervisors (FORBIDDEN) whatever calls it, and creates nothing", async () => {
    const before = await tdb.prisma.apiToken.count();
    for (const who of [staff.rita!, staff.sol!]) {
      expect(await code(shopApiTokens(tdb.prisma, who))).toBe("FORBIDDEN");
      expect(await code(createShopApiToken(tdb.prisma, who, { name: "sneaky", scopes: ["handoffs:decide"] }))).toBe("FORBIDDEN");
    }
    expect(await tdb.prisma.apiToken.count()).toBe(before);
  });

  it("lets an admin create (recorded as theirs), list and revoke their shop's tokens; another shop's is NOT_FOUND", async () => {
    const created = await createShopApiToken(tdb.prisma, staff.ada!, { name: "Helpdesk", scopes: ["handoffs:read"] });
    expect(created.apiToken.createdBy).toEqual({ id: staff.ada!.staffId, name: "Ada" });
    expect((await tdb.prisma.auditEvent.findFirstOrThrow({ where: { subject: created.apiToken.id } })).actor).toBe("ada@acme.test");
    expect((await shopApiTokens(tdb.prisma, staff.ada!)).map((t) => t.id)).toContain(created.apiToken.id);
    expect(await code(revokeShopApiToken(tdb.prisma, staff.rita!, created.apiToken.id))).toBe("FORBIDDEN");
    const globexAdmin = { ...staff.gus!, role: "admin" as const }; // an admin of the other shop
    expect(await code(revokeShopApiToken(tdb.prisma, globexAdmin, created.apiToken.id))).toBe("NOT_FOUND");
    expect((await verifyApiToken(tdb.prisma, created.token)).tenantSlug).toBe("acme");
    await revokeShopApiToken(tdb.prisma, staff.ada!, created.apiToken.id);
    expect(await code(verifyApiToken(tdb.prisma, created.token))).toBe("UNAUTHENTICATED");
  });
});

describe("API token server actions", async () => {
  const actions = await import("@/lib/actions/api-tokens");
  const signIn = (who: Staff | null) => {
    session.claims = who ? { staffId: who.staffId, tenantId: who.tenantId } : null;
  };

  it("refuse anonymous callers (UNAUTHENTICATED) and non-admins (FORBIDDEN)", async () => {
    signIn(null);
    expect(await actions.createApiTokenAction({ name: "x", scopes: ["runs:read"] })).toMatchObject({
      ok: false,
      error: { code: "UNAUTHENTICATED" },
    });
    expect(await actions.revokeApiTokenAction({ tokenId: "t" })).toMatchObject({ ok: false, error: { code: "UNAUTHENTICATED" } });
    for (const who of [staff.rita!, staff.sol!]) {
      signIn(who);
      expect(await actions.createApiTokenAction({ name: "x", scopes: ["runs:read"] })).toMatchObject({
        ok: false,
        error: { code: "FORBIDDEN" },
      });
      expect(await actions.revokeApiTokenAction({ tokenId: "t" })).toMatchObject({ ok: false, error: { code: "FORBIDDEN" } });
    }
  });

  it("create answers the token once and the list without it; revoke answers the list with it revoked", async () => {
    signIn(staff.ada!);
    const created = await actions.createApiTokenAction({ name: "Console-made", scopes: ["handoffs:read", "handoffs:decide"] });
    expect(created.ok).toBe(true);
    if (!created.ok) return;
    expect(created.data.token).toMatch(/^sa_live_/);
    expect(JSON.stringify(created.data.tokens)).not.toContain(created.data.token);
    const bad = await actions.createApiTokenAction({ name: "x", scopes: ["admin:all"] });
    expect(bad).toMatchObject({ ok: false, error: { code: "INVALID_INPUT" } });
    const revoked = await actions.revokeApiTokenAction({ tokenId: created.data.created.id });
    expect(revoked.ok && revoked.data.tokens.find((t) => t.id === created.data.created.id)?.revokedAt).toBeInstanceOf(Date);
  });
});
