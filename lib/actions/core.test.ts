import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { AppError } from "@/lib/errors";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { createOperationFactory, type OperationDeps } from "./core";

// The shared wrapper every server action and console route goes through, against a real seeded database.
describe("staff operation wrapper", () => {
  let db: TestDatabase;
  let rita: { staffId: string; tenantId: string };
  let sol: { staffId: string; tenantId: string };
  let globexTenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const staff = await db.prisma.staffUser.findMany();
    const byEmail = (e: string) => staff.find((s) => s.email === e)!;
    rita = { staffId: byEmail("rita@acme.test").id, tenantId: byEmail("rita@acme.test").tenantId };
    sol = { staffId: byEmail("sol@acme.test").id, tenantId: byEmail("sol@acme.test").tenantId };
    globexTenantId = byEmail("gus@globex.test").tenantId;
  });
  afterAll(async () => {
    await db?.drop();
  });

  function factory(claims: { staffId: string; tenantId: string } | null, extra: Partial<OperationDeps> = {}) {
    return createOperationFactory({ getClaims: async () => claims, getDb: async () => db.prisma, logError: () => undefined, ...extra });
  }
  const input = z.object({ handoffId: z.string().min(1) });

  it("refuses an anonymous caller before reading input or running anything", async () => {
    const handler = vi.fn(async () => "ran");
    const op = factory(null)({ name: "t", input }, handler);
    expect(await op({ handoffId: "x" })).toEqual({ ok: false, error: { code: "UNAUTHENTICATED", message: "Sign in to continue." } });
    expect(await op(undefined)).toMatchObject({ ok: false, error: { code: "UNAUTHENTICATED" } });
    expect(handler).not.toHaveBeenCalled();
  });

  it("re-reads the staff row: a deleted user with a still-valid session is refused", async () => {
    const tenantId = rita.tenantId;
    const temp = await db.prisma.staffUser.create({
      data: { tenantId, email: "temp@acme.test", name: "Temp", passwordHash: "x", role: "reviewer" },
    });
    const handler = vi.fn(async () => "ran");
    const op = factory({ staffId: temp.id, tenantId })({ name: "t", input }, handler);
    expect(await op({ handoffId: "h" })).toEqual({ ok: true, data: "ran" });
    await db.prisma.staffUser.delete({ where: { id: temp.id } });
    expect(await op({ handoffId: "h" })).toMatchObject({ ok: false, error: { code: "UNAUTHENTICATED" } });
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it("refuses a session whose tenant does not match the staff row (forged or moved)", async () => {
    const op = factory({ staffId: rita.staffId, tenantId: globexTenantId })({ name: "t", input }, async () => "ran");
    expect(await op({ handoffId: "h" })).toMatchObject({ ok: false, error: { code: "UNAUTHENTICATED" } });
  });

  it("checks the role, as the database says it is now", async () => {
    const supervisorsOnly = { name: "t", input, roles: ["supervisor", "admin"] as const };
    expect(await factory(rita)(supervisorsOnly, async () => "ran")({ handoffId: "h" })).toMatchObject({
      ok: false,
      error: { code: "FORBIDDEN" },
    });
    expect(await factory(sol)(supervisorsOnly, async () => "ran")({ handoffId: "h" })).toEqual({ ok: true, data: "ran" });
    await db.prisma.staffUser.update({ where: { id: sol.staffId }, data: { role: "reviewer" } });
    try {
      expect(await factory(sol)(supervisorsOnly, async () => "ran")({ handoffId: "h" })).toMatchObject({
        ok: false,
        error: { code: "FORBIDDEN" },
      });
    } finally {
      await db.prisma.staffUser.update({ where: { id: sol.staffId }, data: { role: "supervisor" } });
    }
  });

  it("validates input with zod (INVALID_INPUT) and never calls the handler with bad input", async () => {
    const handler = vi.fn(async () => "ran");
    const result = await factory(rita)({ name: "t", input }, handler)({ handoffId: 42 });
    expect(result).toMatchObject({ ok: false, error: { code: "INVALID_INPUT" } });
    expect(handler).not.toHaveBeenCalled();
  });

  it("hands the handler the caller's tenant and identity from the database", async () => {
    const result = await factory(rita)({ name: "t", input }, async (i, ctx) => ({
      id: i.handoffId,
      staffId: ctx.staffId,
      tenantId: ctx.tenantId,
      role: ctx.role,
      limit: ctx.authorityLimitCents,
      slug: ctx.tenantSlug,
    }))({ handoffId: "h1" });
    expect(result).toEqual({
      ok: true,
      data: { id: "h1", staffId: rita.staffId, tenantId: rita.tenantId, role: "reviewer", limit: 30000, slug: "acme" },
    });
  });

  it("maps an AppError to its code and user message, with details", async () => {
    const op = factory(rita)({ name: "t", input }, async () => {
      throw new AppError("ALREADY_DECIDED", "Already approved by Raj.", { decidedBy: "Raj" }, "internal: row 123 status APPROVED");
    });
    expect(await op({ handoffId: "h" })).toEqual({
      ok: false,
      error: { code: "ALREADY_DECIDED", message: "Already approved by Raj.", details: { decidedBy: "Raj" } },
    });
  });

  it("logs anything else and reports only INTERNAL, never its message", async () => {
    const logError = vi.fn();
    const op = factory(rita, { logError })({ name: "secretOp", input }, async () => {
      throw new Error('relation "Handoff" does not exist; password=hunter2');
    });
    const result = await op({ handoffId: "h" });
    expect(result).toMatchObject({ ok: false, error: { code: "INTERNAL" } });
    expect(JSON.stringify(result)).not.toMatch(/hunter2|relation/);
    expect(logError).toHaveBeenCalledWith("secretOp", expect.any(Error));
  });

  it("lets framework control flow through (redirect/notFound are re-thrown, not reported)", async () => {
    const control = Object.assign(new Error("NEXT_REDIRECT"), { digest: "NEXT_REDIRECT;replace;/login;307;" });
    const op = factory(rita, {
      rethrow: (err) => {
        if (err === control) throw err;
      },
    })({ name: "t", input }, async () => {
      throw control;
    });
    await expect(op({ handoffId: "h" })).rejects.toBe(control);
  });
});
