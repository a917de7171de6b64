import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signCustomerIdentity, verifyCustomerIdentity } from "@/lib/widget/identity";
import { widgetTenant } from "@/lib/widget/session";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { addAllowedOrigin, embedSnippet, parseAllowedOrigin, removeAllowedOrigin, rotateWidgetSecret, widgetSettings } from "./widget";

let db: TestDatabase;
let ada: { staffId: string; tenantId: string };
let raj: { staffId: string; tenantId: string };
const OLD_SECRET = "acme-widget-secret-dev";

beforeAll(async () => {
  db = await createTestDatabase();
  const staff = await db.prisma.staffUser.findMany();
  const of = (email: string) => {
    const s = staff.find((x) => x.email === email)!;
    return { staffId: s.id, tenantId: s.tenantId };
  };
  ada = of("ada@acme.test");
  raj = of("raj@acme.test");
});
afterAll(async () => {
  await db?.drop();
});

const token = (secret: string, now: Date) => signCustomerIdentity(secret, "dana@example.com", 600, { shop: "acme", now });

describe("rotating the widget secret", () => {
  it("keeps the previous secret verifying for the overlap, not after; the new one is shown once and never audited", async () => {
    expect((await db.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).widgetSecret).toBe(OLD_SECRET);
    const rotatedAt = new Date();
    const { secret, previousValidUntil } = await rotateWidgetSecret(db.prisma, ada, { overlapHours: 24 }, rotatedAt);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(previousValidUntil).toEqual(new Date(rotatedAt.getTime() + 24 * 3_600_000));

    // As the widget reads the shop on every conversation start.
    const tenant = await widgetTenant(db.prisma, "acme");
    const during = new Date(rotatedAt.getTime() + 23 * 3_600_000);
    const after = new Date(rotatedAt.getTime() + 24 * 3_600_000 + 60_000);
    await expect(verifyCustomerIdentity(tenant, await token(secret, during), during)).resolves.toMatchObject({ email: "dana@example.com" });
    await expect(verifyCustomerIdentity(tenant, await token(OLD_SECRET, during), during)).resolves.toMatchObject({
      email: "dana@example.com",
    });
    await expect(verifyCustomerIdentity(tenant, await token(OLD_SECRET, after), after)).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    await expect(verifyCustomerIdentity(tenant, await token(secret, after), after)).resolves.toMatchObject({ email: "dana@example.com" });

    const settings = await widgetSettings(db.prisma, ada, during);
    expect(settings).toMatchObject({ slug: "acme", previousSecretValidUntil: previousValidUntil });
    expect(JSON.stringify(settings)).not.toContain(secret);
    expect((await widgetSettings(db.prisma, ada, after)).previousSecretValidUntil).toBeNull();

    const audit = await db.prisma.auditEvent.findFirstOrThrow({ where: { action: "widget.secret_rotated" } });
    expect(audit).toMatchObject({ actor: "ada@acme.test", data: { overlapHours: 24 } });
    // The record as stored (its chain position is a bigint).
    const stored = JSON.stringify(audit, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain(OLD_SECRET);
  });

  it("without an overlap the old secret stops at once; a second rotation ends the older overlap", async () => {
    const first = await rotateWidgetSecret(db.prisma, ada, { overlapHours: 24 });
    const second = await rotateWidgetSecret(db.prisma, ada, { overlapHours: 0 });
    const tenant = await widgetTenant(db.prisma, "acme");
    const now = new Date();
    await expect(verifyCustomerIdentity(tenant, await token(first.secret, now), now)).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    await expect(verifyCustomerIdentity(tenant, await token(second.secret, now), now)).resolves.toBeTruthy();
    await expect(rotateWidgetSecret(db.prisma, ada, { overlapHours: 169 })).rejects.toMatchObject({ code: "INVALID_INPUT" });
  });

  it("is for admins only", async () => {
    const before = (await db.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).widgetSecret;
    await expect(rotateWidgetSecret(db.prisma, raj, { overlapHours: 24 })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(addAllowedOrigin(db.prisma, raj, "https://shop.example.com")).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(widgetSettings(db.prisma, raj)).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect((await db.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).widgetSecret).toBe(before);
  });
});

describe("allowed origins", () => {
  it.each([
    ["https://shop.example.com", "https://shop.example.com"],
    [" https://Shop.Example.com/ ", "https://shop.example.com"],
    ["https://shop.example.com:8443", "https://shop.example.com:8443"],
    ["http://localhost:3000", "http://localhost:3000"],
  ])("accepts %s as %s", (raw, origin) => {
    expect(parseAllowedOrigin(raw)).toBe(origin);
  });

  it.each([
    ["shop.example.com", /origin like/],
    ["https://shop.example.com/checkout", /no path/],
    ["https://shop.example.com/?a=1", /no path/],
    ["http://shop.example.com", /https/],
    ["javascript:alert(1)", /origin like/],
    ["", /origin like/],
    ["https://*", /origin like/],
    ["https://*.example.com", /origin like/],
    ["https://%2a.example.com", /origin like/],
  ])("refuses %s", (raw, why) => {
    expect(() => parseAllowedOrigin(raw)).toThrow(
      expect.objectContaining({ code: "INVALID_INPUT", userMessage: expect.stringMatching(why) }),
    );
  });

  it("adds and removes origins, refusing duplicates and unknowns, each change audited", async () => {
    expect(await addAllowedOrigin(db.prisma, ada, "https://shop.example.com/")).toEqual(["https://shop.example.com"]);
    expect(await addAllowedOrigin(db.prisma, ada, "https://www.shop.example.com")).toEqual([
      "https://shop.example.com",
      "https://www.shop.example.com",
    ]);
    await expect(addAllowedOrigin(db.prisma, ada, "https://shop.example.com")).rejects.toMatchObject({ code: "CONFLICT" });
    expect(await removeAllowedOrigin(db.prisma, ada, "https://shop.example.com")).toEqual(["https://www.shop.example.com"]);
    await expect(removeAllowedOrigin(db.prisma, ada, "https://shop.example.com")).rejects.toMatchObject({ code: "NOT_FOUND" });
    const trail = await db.prisma.auditEvent.findMany({ where: { subject: "widget:origins" }, orderBy: { createdAt: "asc" } });
    expect(trail.map((a) => [a.action, (a.data as { origin: string }).origin])).toEqual([
      ["widget.origin_added", "https://shop.example.com"],
      ["widget.origin_added", "https://www.shop.example.com"],
      ["widget.origin_removed", "https://shop.example.com"],
    ]);
    // Another shop's list is untouched.
    expect((await db.prisma.tenant.findUniqueOrThrow({ where: { slug: "globex" } })).allowedOrigins).toEqual([]);
  });

  it("writes the snippet a shop pastes", () => {
    expect(embedSnippet("https://support.example.com/", "acme")).toBe(
      '<script src="https://support.example.com/embed.js" data-shop="acme" async></script>',
    );
  });
});
