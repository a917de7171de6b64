// Demo data: two tenants (acme, globex), their customers, orders, shipments, staff and policy v1.
// Money in integer cents. Idempotent: nothing happens when tenant `acme` already exists.
import bcrypt from "bcryptjs";
import type { Prisma, PrismaClient } from "@/lib/generated/prisma/client";
import { env } from "@/lib/env";
import { API_SCOPES } from "@/lib/api/scopes";
import { storeToken } from "@/lib/api/tokens";
import { seedDemoHistory } from "./seed-history";

/** Policy v1 rules, shared by both demo tenants. */
export const DEMO_POLICY_RULES = {
  refund: {
    autoMaxCents: 10000,
    approvalMaxCents: 50000,
    twoApproversFromCents: 40000,
    autoPerCustomerMaxCents: 15000,
    autoPerCustomerWindowDays: 30,
  },
  replacement: { autoMaxCents: 20000, autoPerCustomerMaxCents: 30000, autoPerCustomerWindowDays: 30 },
  cancellation: { requiresApproval: true },
  addressChange: { allowedStatuses: ["processing"] },
  approvalTtlHours: 24,
  verificationTtlMinutes: 60,
  allowedTools: [
    "verify_customer",
    "send_verification_code",
    "lookup_order",
    "list_orders",
    "refund_order",
    "create_replacement",
    "cancel_order",
    "update_shipping_address",
    "escalate_to_human",
    "ask_returns_specialist",
    "ask_delivery_specialist",
  ],
  budgets: {
    maxTurns: 12,
    tokenBudget: 80000,
    wallTimeSeconds: 600,
    maxRequestAttempts: 4,
    maxToolAttempts: 3,
    maxRunCostMicros: 500_000,
    maxConversationCostMicros: 2_000_000,
    maxShopDailyCostMicros: 200_000_000,
  },
  limits: {
    messagesPerMinutePerConversation: 12,
    messagesPerMinutePerIp: 30,
    messagesPerMinutePerShop: 1200,
    conversationsPerHourPerIp: 30,
  },
} as const;

/** Every demo staff user's password. */
export const DEMO_PASSWORD = "demo-password";

type OrderStatus = "processing" | "shipped" | "delivered" | "lost" | "cancelled";
type ShipmentStatus = "label_created" | "in_transit" | "delivered" | "lost";

interface DemoOrderItem {
  sku: string;
  name: string;
  quantity: number;
  unitPriceCents: number;
}
interface DemoOrder {
  number: string;
  totalCents: number;
  /** what was bought; the lines add up to totalCents (checked when seeding) */
  items: DemoOrderItem[];
  status: OrderStatus;
  note?: string;
  daysAgo: number;
  address: { line1: string; city: string; postalCode: string; country: string };
}
interface DemoTenant {
  slug: string;
  name: string;
  widgetSecret: string;
  /** A JSON API token to store (hashed) with every scope: ACME_API_TOKEN / GLOBEX_API_TOKEN, when set. */
  apiToken?: string;
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

const item = (sku: string, name: string, quantity: number, unitPriceCents: number): DemoOrderItem => ({
  sku,
  name,
  quantity,
  unitPriceCents,
});

function demoTenants(): DemoTenant[] {
  const dana = { line1: "214 Alder Street", city: "Portland", postalCode: "97204", country: "US" };
  const sam = { line1: "88 Harbour Road", city: "Seattle", postalCode: "98101", country: "US" };
  return [
    {
      slug: "acme",
      name: "Acme Outfitters",
      widgetSecret: env().ACME_WIDGET_SECRET ?? "acme-widget-secret-dev",
      apiToken: env().ACME_API_TOKEN,
      customers: [
        {
          email: "dana@example.com",
          name: "Dana Reyes",
          orders: [
            {
              number: "A-1001",
              totalCents: 4250,
              status: "delivered",
              daysAgo: 30,
              address: dana,
              items: [item("SK-TS3", "Trail socks (3-pack)", 1, 1450), item("HT-MB1", "Merino beanie", 1, 2800)],
            },
            {
              number: "A-1002",
              totalCents: 25000,
              status: "delivered",
              note: "arrived damaged",
              daysAgo: 12,
              address: dana,
              items: [item("BP-A45", "Alpine 45L backpack", 1, 25000)],
            },
            {
              number: "A-1003",
              totalCents: 82000,
              status: "lost",
              daysAgo: 9,
              address: dana,
              items: [item("JK-SD1", "Summit down jacket", 1, 62000), item("TP-CF2", "Carbon trekking poles (pair)", 1, 20000)],
            },
            {
              number: "A-1004",
              totalCents: 46000,
              status: "delivered",
              daysAgo: 6,
              address: dana,
              items: [item("TN-2P", "Two-person tent", 1, 46000)],
            },
          ],
        },
        {
          email: "sam@example.com",
          name: "Sam Okafor",
          orders: [
            {
              number: "A-2001",
              totalCents: 12900,
              status: "processing",
              daysAgo: 1,
              address: sam,
              items: [item("RS-M", "Rain shell, size M", 1, 12900)],
            },
            {
              number: "A-2002",
              totalCents: 7500,
              status: "processing",
              daysAgo: 2,
              address: sam,
              items: [item("CS-01", "Camp stove", 1, 7500)],
            },
            {
              number: "A-2003",
              totalCents: 18000,
              status: "delivered",
              daysAgo: 20,
              address: sam,
              items: [item("HB-43", "Hiking boots, size 43", 1, 18000)],
            },
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
              items: [item("WF-01", "Water filter", 2, 3000)],
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
              items: [item("SB-UL", "Ultralight sleeping bag", 1, 48000)],
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
      widgetSecret: env().GLOBEX_WIDGET_SECRET ?? "globex-widget-secret-dev",
      apiToken: env().GLOBEX_API_TOKEN,
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
              items: [item("HM-01", "Camping hammock", 1, 15000)],
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
  /** runs of demo history written (seedDemo with `history`) */
  historyRuns?: number;
}

/**
 * Loads the demo data in one transaction (with `history`, then acme's past weeks: lib/setup/seed-history). Idempotent: returns `{ seeded: false }` without writing when
 * tenant `acme` exists. Dates are relative to now (days ago at a fixed hour), so they stay "recent".
 */
export async function seedDemo(prisma: PrismaClient, opts: { history?: boolean } = {}): Promise<SeedSummary> {
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
  // A few weeks of past conversations for the metrics and the what-if (the app's seed; tests start without them).
  if (opts.history) summary.historyRuns = (await seedDemoHistory(prisma, { now: today })).runs;
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
            allowedOrigins: [],
            policyVersion: 1,
            policies: { create: { version: 1, rules: DEMO_POLICY_RULES as unknown as Prisma.InputJsonValue } },
          },
        });
        if (t.apiToken)
          await storeToken(tx, { tenantId: tenant.id, name: "demo token (environment)", scopes: API_SCOPES, token: t.apiToken });
        let orders = 0;
        for (const c of t.customers) {
          const customer = await tx.customer.create({ data: { tenantId: tenant.id, email: c.email, name: c.name } });
          for (const o of c.orders) {
            const lines = o.items.reduce((sum, i) => sum + i.quantity * i.unitPriceCents, 0);
            if (lines !== o.totalCents) throw new Error(`demo order ${o.number}: items add up to ${lines}, not ${o.totalCents}`);
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
                items: { create: o.items },
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
