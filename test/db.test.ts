import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import bcrypt from "bcryptjs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { DEMO_PASSWORD, DEMO_POLICY_RULES, seedDemo } from "@/lib/setup/seed";
import { readEmbeddedRecord } from "@/lib/db/server";
import { createTestDatabase, type TestDatabase } from "./db";

const run = promisify(execFile);

describe("seeded test database", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("holds the demo data", async () => {
    const { prisma } = db;
    expect(await prisma.tenant.count()).toBe(2);
    expect(await prisma.customer.count()).toBe(5);
    expect(await prisma.order.count()).toBe(10);
    expect(await prisma.shipment.count()).toBe(10);
    expect(await prisma.staffUser.count()).toBe(5);

    const acme = await prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" }, include: { policies: true } });
    expect(acme.name).toBe("Acme Outfitters");
    expect(acme.policyVersion).toBe(1);
    expect(acme.allowedOrigins).toEqual([]);
    expect(acme.policies).toHaveLength(1);
    expect(acme.policies[0]!.rules).toEqual(DEMO_POLICY_RULES);

    const alexes = await prisma.customer.findMany({ where: { tenantId: acme.id, name: "Alex Kim" }, orderBy: { email: "asc" } });
    expect(alexes.map((c) => c.email)).toEqual(["akim@example.org", "alex.kim@example.com"]);
  });

  it("has Dana's four orders with shipments", async () => {
    const dana = await db.prisma.customer.findFirstOrThrow({
      where: { email: "dana@example.com", tenant: { slug: "acme" } },
      include: { orders: { orderBy: { number: "asc" }, include: { shipments: true } } },
    });
    expect(dana.name).toBe("Dana Reyes");
    expect(dana.orders.map((o) => [o.number, o.totalCents, o.status, o.note])).toEqual([
      ["A-1001", 4250, "delivered", null],
      ["A-1002", 25000, "delivered", "arrived damaged"],
      ["A-1003", 82000, "lost", null],
      ["A-1004", 46000, "delivered", null],
    ]);
    for (const o of dana.orders) {
      expect(o.shipments).toHaveLength(1);
      expect(o.shipments[0]!.carrier).toBe("UPS");
      expect(o.shipments[0]!.tracking).toMatch(/^1Z[0-9A-Z]{16}$/);
      expect(o.shippingAddress).toMatchObject({
        line1: expect.any(String),
        city: expect.any(String),
        postalCode: expect.any(String),
        country: "US",
      });
      expect(o.placedAt.getTime()).toBeLessThan(Date.now());
    }
    expect(dana.orders[2]!.shipments[0]!.status).toBe("lost");
  });

  it("has staff with hashed passwords and authority limits", async () => {
    const staff = await db.prisma.staffUser.findMany({ orderBy: { email: "asc" } });
    expect(staff.map((s) => [s.email, s.role, s.authorityLimitCents])).toEqual([
      ["ada@acme.test", "admin", null],
      ["gus@globex.test", "reviewer", 100000],
      ["raj@acme.test", "reviewer", 100000],
      ["rita@acme.test", "reviewer", 30000],
      ["sol@acme.test", "supervisor", null],
    ]);
    expect(await bcrypt.compare(DEMO_PASSWORD, staff[0]!.passwordHash ?? "")).toBe(true);
  });

  it("seedDemo is idempotent", async () => {
    expect((await seedDemo(db.prisma)).seeded).toBe(false);
    expect(await db.prisma.order.count()).toBe(10);
  });
});

describe("test database isolation", () => {
  it("gives each database its own data", async () => {
    const [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    try {
      expect(a.name).not.toBe(b.name);
      await a.prisma.order.updateMany({ where: { number: "A-1001" }, data: { refundedCents: 4250 } });
      await a.prisma.tenant.deleteMany({ where: { slug: "nobody" } });
      const acmeB = await b.prisma.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
      await b.prisma.customer.create({ data: { tenantId: acmeB.id, email: "new@example.com", name: "New Person" } });

      expect((await a.prisma.order.findFirstOrThrow({ where: { number: "A-1001" } })).refundedCents).toBe(4250);
      expect((await b.prisma.order.findFirstOrThrow({ where: { number: "A-1001" } })).refundedCents).toBe(0);
      expect(await a.prisma.customer.count()).toBe(5);
      expect(await b.prisma.customer.count()).toBe(6);
    } finally {
      await Promise.all([a.drop(), b.drop()]);
    }
  });

  it("can start empty (migrated, unseeded)", async () => {
    const empty = await createTestDatabase({ seed: false });
    try {
      expect(await empty.prisma.tenant.count()).toBe(0);
      expect((await seedDemo(empty.prisma)).seeded).toBe(true);
      expect(await empty.prisma.order.count()).toBe(10);
    } finally {
      await empty.drop();
    }
  });
});

describe("shared server", () => {
  it("a second process's ensureDatabaseUrl() reuses the same server", async () => {
    const ctx = inject("testDb");
    const root = path.resolve(import.meta.dirname, "..");
    const env = { ...process.env };
    if (ctx.mode === "embedded") delete env.DATABASE_URL;
    const { stdout } = await run(
      path.join(root, "node_modules", ".bin", "tsx"),
      [path.join(root, "test", "fixtures", "print-database-url.ts")],
      {
        cwd: root,
        env,
        timeout: 60_000,
      },
    );
    const child = JSON.parse(stdout.trim().split("\n").at(-1)!) as { url: string; owner: boolean; postmasterPid: number | null };

    if (ctx.mode === "external") {
      expect(child.url).toBe(process.env.DATABASE_URL); // used as-is
      return;
    }
    const setupPort = new URL(ctx.adminUrl).port;
    expect(new URL(child.url).port).toBe(setupPort);
    expect(child.owner).toBe(false); // it connected; it did not start (or adopt) a server
    expect(child.postmasterPid).toBe(readEmbeddedRecord()?.pid);

    // ...and the server is still up after the child exited.
    const client = new pg.Client({ connectionString: ctx.adminUrl });
    await client.connect();
    const { rows } = await client.query<{ port: string }>("SELECT current_setting('port') AS port");
    await client.end();
    expect(rows[0]!.port).toBe(setupPort);
  });
});
