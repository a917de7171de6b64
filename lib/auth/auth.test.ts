import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { safeCallbackUrl } from "./callback-url";
import { parseSessionClaims } from "./claims";
import { verifyStaffCredentials } from "./credentials";
import { authSecret } from "./secret";

describe("staff credentials", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("accepts the right password (email in any case) and returns the session claims", async () => {
    const claims = await verifyStaffCredentials(db.prisma, "  Raj@ACME.test ", "demo-password");
    expect(claims).toMatchObject({
      email: "raj@acme.test",
      name: "Raj",
      role: "reviewer",
      tenantSlug: "acme",
      tenantName: "Acme Outfitters",
    });
    expect(parseSessionClaims(claims)).toEqual(claims);
  });

  it.each([
    ["a wrong password", "raj@acme.test", "wrong"],
    ["an unknown email", "nobody@acme.test", "demo-password"],
    ["an empty password", "raj@acme.test", ""],
    ["a non-string", 42, "demo-password"],
  ])("refuses %s without saying which half was wrong", async (_name, email, password) => {
    expect(await verifyStaffCredentials(db.prisma, email, password)).toBeNull();
  });
});

describe("session helpers", () => {
  it("rejects incomplete claims", () => {
    expect(parseSessionClaims({ staffId: "s", tenantId: "t" })).toBeNull();
    expect(parseSessionClaims(undefined)).toBeNull();
  });

  it.each([
    [undefined, "/console"],
    ["/console/handoffs/abc?x=1", "/console/handoffs/abc?x=1"],
    ["https://evil.example/", "/console"],
    ["//evil.example/", "/console"],
    ["/\\\\evil.example", "/console"],
    ["javascript:alert(1)", "/console"],
  ])("callbackUrl %s → %s (same-site paths only)", (raw, want) => {
    expect(safeCallbackUrl(raw)).toBe(want);
  });

  it("falls back to a stable derived secret when NEXTAUTH_SECRET is unset, and prefers the configured one", () => {
    const saved = { a: process.env.NEXTAUTH_SECRET, b: process.env.AUTH_SECRET };
    try {
      delete process.env.NEXTAUTH_SECRET;
      delete process.env.AUTH_SECRET;
      const derived = authSecret();
      expect(derived.length).toBeGreaterThanOrEqual(32);
      expect(authSecret()).toBe(derived);
      process.env.NEXTAUTH_SECRET = "configured-secret";
      expect(authSecret()).toBe("configured-secret");
    } finally {
      if (saved.a === undefined) delete process.env.NEXTAUTH_SECRET;
      else process.env.NEXTAUTH_SECRET = saved.a;
      if (saved.b === undefined) delete process.env.AUTH_SECRET;
      else process.env.AUTH_SECRET = saved.b;
    }
  });
});
