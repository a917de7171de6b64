// Demo data: two tenants (acme, globex), their customers, orders, shipments, staff and policy v1.
// Money in integer cents. Idempotent: nothing happens when tenant `acme` already exists.
import { randomBytes } from "node:crypto";
import bcrypt from "bcryptjs";
import type { Prisma, PrismaClient } from "@/lib/generated/prisma/client";

/** Policy v1 rules, shared by both demo tenants. */
export const DEMO_POLICY_RULES = {
  refund: { autoMaxCents: 10000, approvalMaxCents: 50000, twoApproversFromCents: 40000 },
  replacement: { autoMaxCents: 20000 },
  cancellation: { requiresApproval: true },
  addressChange: { allowedStatuses: ["processing"] },
  approvalTtlHours: 24,
  verificationTtlMinutes: 60,
  allowedTools: [
    "verify_customer",
    "lookup_order",
    "list_orders",
    "refund_order",
    "create_replacement",
    "cancel_order",
    "update_shipping_address",
    "escalate_to_human",
  ],
  budgets: { maxTurns: 12, tokenBudget: 80000, wallTimeSeconds: 600, maxRequestAttempts: 4, maxToolAttempts: 3 },
} as const;

/** Every demo staff user's password. */
export const DEMO_PASSWORD = "demo-password";

type OrderStatus = "processing" | "shipped" | "delivered" | "lost" | "cancelled";
type ShipmentStatus = "label_created" | "in_transit" | "delivered" | "lost";

interface DemoOrder {
  number: string;
  totalCents: number;
  status: OrderStatus;
  note?: string;
  daysAgo: number;
  address: { line1: string; city: string; postalCode: string; country: string };
}
interface DemoTenant {
  slug: string;
  name: string;
  widgetSecret: string;
  apiToken: string;
  customers: { email: string; name: string; orders: DemoOrder[] }[];
  staff: { email: string; name: string; role: "reviewer" | "supervisor" | "admin"; authorityLimitCents: number | null }[];
}

const SHIPMENT_STATUS: Record<OrderStatus, ShipmentStatus> = {
  processing: "label_created",
  shipped: "in_transit",
  delivered: "delivered",
  lost: "lost", // A-1003 went missing in transit
  cancelled: "label_created",
};

function demoTenants(): DemoTenant[] {
  const dana = { line1: "214 Alder Street", city: "Portland", postalCode: "97204", country: "US" };
  const sam = { line1: "88 Harbour Road", city: "Seattle", postalCode: "98101", country: "US" };
  return [
    {
      slug: "acme",
      name: "Acme Outfitters",
      widgetSecret: process.env.ACME_WIDGET_SECRET || "acme-widget-secret-dev",
      apiToken: process.env.ACME_API_TOKEN || `acme_${randomBytes(24).toString("base64url")}`,
      customers: [
        {
          email: "dana@example.com",
          name: "Dana Reyes",
          orders: [
            { number: "A-1001", totalCents: 4250, status: "delivered", daysAgo: 30, address: dana },
            { number: "A-1002", totalCents: 25000, status: "delivered", note: "arrived damaged", daysAgo: 12, address: dana },
            { number: "A-1003", totalCents: 82000, status: "lost", daysAgo: 9, address: dana },
            { number: "A-1004", totalCents: 46000, status: "delivered", daysAgo: 6, address: dana },
          ],
        },
        {
          email: "sam@example.com",
          name: "Sam Okafor",
          orders: [
            { number: "A-2001", totalCents: 12900, status: "processing", daysAgo: 1, address: sam },
            { number: "A-2002", totalCents: 7500, status: "processing", daysAgo: 2, address: sam },
            { number: "A-2003", totalCents: 18000, status: "delivered", daysAgo: 20, address: sam },
          ],
        },
        {
          email: "alex.kim@example.com",
          name: "Alex Kim",
          orders: [
            {
              number: "A-3001",
              totalCents: 6000,
              status: "delivered",
              daysAgo: 15,
              address: { line1: "5 Maple Court", city: "Austin", postalCode: "73301", country: "US" },
            },
          ],
        },
        {
          email: "akim@example.org",
          name: "Alex Kim",
          orders: [
            {
              number: "A-3002",
              totalCents: 48000,
              status: "delivered",
              daysAgo: 8,
              address: { line1: "1200 Lakeshore Drive", city: "Chicago", postalCode: "60610", country: "US" },
            },
          ],
        },
      ],
      staff: [
        { email: "rita@acme.test", name: "Rita", role: "reviewer", authorityLimitCents: 30000 },
        { email: "raj@acme.test", name: "Raj", role: "reviewer", authorityLimitCents: 100000 },
        { email: "sol@acme.test", name: "Sol", role: "supervisor", authorityLimitCents: null },
        { email: "ada@acme.test", name: "Ada", role: "admin", authorityLimitCents: null },
      ],
    },
    {
      slug: "globex",
      name: "Globex Corp",
      widgetSecret: process.env.GLOBEX_WIDGET_SECRET || "globex-widget-secret-dev",
      apiToken: process.env.GLOBEX_API_TOKEN || `globex_${randomBytes(24).toString("base64url")}`,
      customers: [
        {
          email: "hank@globex.test",
          name: "Hank Scorpio",
          orders: [
            {
              number: "G-9001",
              totalCents: 15000,
              status: "delivered",
              daysAgo: 10,
              address: { line1: "1 Globex Way", city: "Cypress Creek", postalCode: "49001", country: "US" },
            },
          ],
        },
      ],
      staff: [{ email: "gus@globex.test", name: "Gus", role: "reviewer", authorityLimitCents: 100000 }],
    },
  ];
}

/** A deterministic UPS-style tracking number: 1Z + shipper (6) + service (2) + 8 digits. */
function trackingFor(orderNumber: string): string {
  return `1Z9A7E3W03${orderNumber.replace(/\D/g, "").padStart(8, "0")}`;
}

/** What seedDemo did. */
export interface SeedSummary {
  seeded: boolean;
  tenants: { slug: string; customers: number; orders: number; staff: number }[];
}

/**
 * Loads the demo data in one transaction. Idempotent: returns `{ seeded: false }` without writing when
 * tenant `acme` exists. Dates are relative to now (days ago at a fixed hour), so they stay "recent".
 */
export async function seedDemo(prisma: PrismaClient): Promise<SeedSummary> {
  if (await prisma.tenant.findUnique({ where: { slug: "acme" }, select: { id: true } })) return { seeded: false, tenants: [] };
  const tenants = demoTenants();
  // Hash outside the transaction (bcrypt is slow on purpose); one salt per user.
  const hashes = new Map<string, string>();
  for (const t of tenants) for (const s of t.staff) hashes.set(s.email, await bcrypt.hash(DEMO_PASSWORD, 10));

  const today = new Date();
  today.setUTCHours(15, 0, 0, 0);
  const daysAgo = (n: number) => new Date(today.getTime() - n * 86_400_000);

  const summary: SeedSummary = { seeded: true, tenants: [] };
  try {
    await seedTenants(prisma, tenants, hashes, daysAgo, summary);
  } catch (err) {
    // Another process seeded concurrently: its transaction won the unique slug.
    if ((err as { code?: string }).code === "P2002" && (await prisma.tenant.findUnique({ where: { slug: "acme" } }))) {
      return { seeded: false, tenants: [] };
    }
    throw err;
  }
  return summary;
}

async function seedTenants(
  prisma: PrismaClient,
  tenants: DemoTenant[],
  hashes: Map<string, string>,
  daysAgo: (n: number) => Date,
  summary: SeedSummary,
): Promise<void> {
  await prisma.$transaction(
    async (tx) => {
      for (const t of tenants) {
        const tenant = await tx.tenant.create({
          data: {
            slug: t.slug,
            name: t.name,
            widgetSecret: t.widgetSecret,
            apiToken: t.apiToken,
            allowedOrigins: [],
            policyVersion: 1,
            policies: { create: { version: 1, rules: DEMO_POLICY_RULES as unknown as Prisma.InputJsonValue } },
          },
        });
        let orders = 0;
        for (const c of t.customers) {
          const customer = await tx.customer.create({ data: { tenantId: tenant.id, email: c.email, name: c.name } });
          for (const o of c.orders) {
            const placedAt = daysAgo(o.daysAgo);
            const shipStatus = SHIPMENT_STATUS[o.status];
            await tx.order.create({
              data: {
                tenantId: tenant.id,
                customerId: customer.id,
                number: o.number,
                totalCents: o.totalCents,
                status: o.status,
                note: o.note ?? null,
                shippingAddress: o.address,
                placedAt,
                shipments: {
                  create: {
                    carrier: "UPS",
                    tracking: trackingFor(o.number),
                    status: shipStatus,
                    // label printed at once; delivered/lost a few days later
                    updatedAt: shipStatus === "label_created" ? placedAt : daysAgo(Math.max(0, o.daysAgo - 3)),
                  },
                },
              },
            });
            orders++;
          }
        }
        for (const s of t.staff) {
          await tx.staffUser.create({
            data: {
              tenantId: tenant.id,
              email: s.email,
              name: s.name,
              passwordHash: hashes.get(s.email)!,
              role: s.role,
              authorityLimitCents: s.authorityLimitCents,
            },
          });
        }
        summary.tenants.push({ slug: t.slug, customers: t.customers.length, orders, staff: t.staff.length });
      }
    },
    { timeout: 30_000 },
  );
}
