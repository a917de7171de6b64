// Isolation between shops (tenants) sharing one database, across every surface. Shop A is the seeded "acme";
// shop B is "globex" (seeded too), with an admin and a supervisor added here; shop C ("northwind") is a shop created
// here the way a real shop would be — not one of the demo shops. As shop B's staff, API token and widget customer —
// and as an anonymous visitor — each test tries to read or act on shop A's (or C's) data.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { issueApiToken } from "@/lib/api/tokens";
import { AppError } from "@/lib/errors";
import { storeOf } from "@/lib/db/kysely";
import { say } from "@/lib/operator/commands";
import { DEMO_POLICY_RULES } from "@/lib/setup/seed";
import { harnessApiClient } from "../api/api-client";
import { createHarness, type Harness } from "../runtime-harness";

// `after()` needs the server's after-response machinery: the work is kept and run when the test says.
const afterWork: Array<() => unknown> = [];
vi.mock("next/server", async (original) => ({
  ...(await original<typeof import("next/server")>()),
  after: (fn: () => unknown) => afterWork.push(fn),
}));

let h: Harness;
let api: ReturnType<typeof harnessApiClient>;
let globex: { id: string; slug: string };
let globexAdmin: { id: string; email: string; tenantId: string; role: "admin" };
let globexSupervisor: { id: string; email: string; tenantId: string; role: "supervisor" };
let globexToken: string;
/** A refund of acme's waiting for a person (Dana, $460 on an order of her own). */
let parkedA: { conversationId: string; runId: string; handoffId: string; version: number };

/** The AppError code a call is refused with ("OK" when it is not refused). */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "OK";
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}

/** Every value of `prop` in a React element tree (intrinsic elements and their children; components are not run). */
function propsNamed(node: unknown, prop: string, out: unknown[] = []): unknown[] {
  if (Array.isArray(node)) {
    for (const n of node) propsNamed(n, prop, out);
    return out;
  }
  if (node && typeof node === "object" && "props" in node) {
    const props = (node as { props: Record<string, unknown> }).props;
    if (props[prop] !== undefined) out.push(props[prop]);
    propsNamed(props.children, prop, out);
  }
  return out;
}

beforeAll(async () => {
  h = await createHarness();
  // The app's own process-wide database client and runtime are this test's (route handlers and pages use them).
  const g = globalThis as { __supportPrisma?: { client?: Promise<unknown> } };
  (g.__supportPrisma ??= {}).client = Promise.resolve(h.db);
  (globalThis as { __supportRuntime?: Promise<unknown> }).__supportRuntime = Promise.resolve(h.deps);
  api = harnessApiClient(h);
  globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
  const admin = await h.db.staffUser.create({
    data: { tenantId: globex.id, email: "gina@globex.test", name: "Gina", role: "admin", passwordHash: "x", authorityLimitCents: null },
  });
  const supervisor = await h.db.staffUser.create({
    data: { tenantId: globex.id, email: "stu@globex.test", name: "Stu", role: "supervisor", passwordHash: "x", authorityLimitCents: null },
  });
  globexAdmin = { id: admin.id, email: admin.email, tenantId: globex.id, role: "admin" };
  globexSupervisor = { id: supervisor.id, email: supervisor.email, tenantId: globex.id, role: "supervisor" };
  globexToken = (
    await issueApiToken(h.db, {
      tenantId: globex.id,
      name: "probe",
      scopes: ["handoffs:read", "handoffs:decide", "runs:read", "conversations:read"],
      issuedBy: { operator: true },
    })
  ).token;
  parkedA = await h.parkRefund(46000);
});

afterAll(async () => {
  delete (globalThis as { __supportPrisma?: { client?: unknown } }).__supportPrisma?.client;
  delete (globalThis as { __supportRuntime?: unknown }).__supportRuntime;
  await h?.close();
});

describe("anonymous surfaces", () => {
  it("the public health check does not reveal how many handoffs another shop has waiting", async () => {
    // /api/health answers anyone (no session, no token). A shop — or anyone — polling it must not be able to watch
    // another shop's approval queue grow and shrink.
    const { GET } = await import("@/app/api/health/route");
    const read = async () => (await (await GET()).json()) as { ok: boolean; pendingHandoffs?: number; tenants?: number };
    const before = await read();
    expect(before.ok).toBe(true);
    // Acme parks one more refund for a person: nothing about it concerns an anonymous caller.
    await h.parkRefund(30000);
    const after = await read();
    expect(
      { pendingHandoffsBefore: before.pendingHandoffs, pendingHandoffsAfter: after.pendingHandoffs },
      "an unauthenticated caller sees acme's queue size change",
    ).toEqual({ pendingHandoffsBefore: before.pendingHandoffs, pendingHandoffsAfter: before.pendingHandoffs });
  });

  it("the demo storefront does not sign the identity of a real shop's customers for an anonymous visitor", async () => {
    // A shop that is not one of the demo shops: created as any shop is, with its own widget secret and customers.
    const shop = await h.db.tenant.create({
      data: {
        slug: "northwind",
        name: "Northwind Traders",
        widgetSecret: "northwind-secret-that-only-northwind-knows",
        policyVersion: 1,
        policies: { create: { version: 1, rules: DEMO_POLICY_RULES as object } },
      },
    });
    const customer = await h.db.customer.create({ data: { tenantId: shop.id, email: "priya@northwind.example", name: "Priya Shah" } });
    await h.db.order.create({
      data: {
        tenantId: shop.id,
        customerId: customer.id,
        number: "N-5001",
        totalCents: 9000,
        status: "delivered",
        shippingAddress: { line1: "1 Quay St", city: "Leeds", postalCode: "LS1 1AA", country: "GB" },
      },
    });
    // An anonymous visitor opens /shop/northwind?as=priya — the page is public.
    const { default: ShopPage } = await import("@/app/(shop)/shop/[slug]/page");
    const tree = await ShopPage({ params: Promise.resolve({ slug: "northwind" }), searchParams: Promise.resolve({ as: "priya" }) });
    const token = propsNamed(tree, "data-customer-token")[0] as string | undefined;
    // With that token, the widget starts a conversation signed in (shop_signed, the strongest level) as Priya.
    let verifiedAs: string | null = null;
    if (token) {
      const { POST } = await import("@/app/api/widget/[shop]/conversation/route");
      const res = await POST(
        new Request("http://localhost/api/widget/northwind/conversation", {
          method: "POST",
          headers: { "content-type": "application/json", "sec-fetch-site": "same-origin", "x-forwarded-for": "203.0.113.9" },
          body: JSON.stringify({ identity: token }),
        }),
        { params: Promise.resolve({ shop: "northwind" }) },
      );
      const body = (await res.json()) as { customer: { name: string } | null };
      verifiedAs = body.customer?.name ?? null;
    }
    expect(
      { identityTokenSigned: !!token, widgetSignedInAs: verifiedAs },
      "an anonymous visitor of /shop/northwind?as=priya is signed in as northwind's customer",
    ).toEqual({ identityTokenSigned: false, widgetSignedInAs: null });
  });
});

describe("shop B's staff against shop A's records ", () => {
  it("globex's admin cannot change acme's staff, tokens or webhook endpoints by id", async () => {
    const { updateStaff, setStaffActive, resendInvite } = await import("@/lib/settings/staff");
    const { revokeShopApiToken } = await import("@/lib/console/api-tokens");
    const webhooks = await import("@/lib/settings/webhooks");
    const invited = await h.db.staffUser.create({
      data: { tenantId: h.acme.id, email: "invitee@acme.test", name: "Invitee", role: "reviewer", passwordHash: null },
    });
    const acmeToken = await issueApiToken(h.db, {
      tenantId: h.acme.id,
      name: "acme",
      scopes: ["handoffs:read"],
      issuedBy: { operator: true },
    });
    const { endpoint } = await webhooks.createWebhookEndpoint(
      h.db,
      { tenantId: h.acme.id, staffId: h.staff.ada.id },
      { url: "https://hooks.example/acme", eventTypes: ["handoff.created"] },
    );
    const actor = { tenantId: globex.id, staffId: globexAdmin.id };
    const got = {
      updateStaff: await refusal(updateStaff(h.db, actor, { staffId: h.staff.raj.id, role: "admin", authorityLimitCents: null })),
      deactivate: await refusal(setStaffActive(h.db, actor, { staffId: h.staff.ada.id, active: false })),
      resendInvite: await refusal(resendInvite(h.db, actor, invited.id, { appUrl: "http://localhost" })),
      revokeToken: await refusal(revokeShopApiToken(h.db, { ...actor, email: globexAdmin.email, role: "admin" }, acmeToken.apiToken.id)),
      disableEndpoint: await refusal(webhooks.setWebhookEndpointEnabled(h.db, actor, endpoint.id, false)),
      testEndpoint: await refusal(webhooks.sendTestWebhook(h.db, actor, endpoint.id)),
      deliveryLog: await refusal(webhooks.webhookDeliveryLog(h.db, actor, endpoint.id)),
      deleteEndpoint: await refusal(webhooks.deleteWebhookEndpoint(h.db, actor, endpoint.id)),
    };
    expect(got).toEqual({
      updateStaff: "NOT_FOUND",
      deactivate: "NOT_FOUND",
      resendInvite: "NOT_FOUND",
      revokeToken: "NOT_FOUND",
      disableEndpoint: "NOT_FOUND",
      testEndpoint: "NOT_FOUND",
      deliveryLog: "NOT_FOUND",
      deleteEndpoint: "NOT_FOUND",
    });
    const raj = await h.db.staffUser.findUniqueOrThrow({ where: { id: h.staff.raj.id } });
    expect(raj.role).toBe("reviewer");
    expect((await h.db.apiToken.findUniqueOrThrow({ where: { id: acmeToken.apiToken.id } })).revokedAt).toBeNull();
    expect((await h.db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } })).enabled).toBe(true);
  });

  it("globex's admin cannot decide, claim or take over acme's handoff and conversation", async () => {
    const { decideHandoff } = await import("@/lib/runtime/resume");
    const { claimHandoff } = await import("@/lib/console/claims");
    const { takeOverConversation, replyAsStaff } = await import("@/lib/conversations/takeover");
    const { handoffDetail, conversationDetail } = await import("@/lib/console/queries");
    const actor = { tenantId: globex.id, staffId: globexAdmin.id };
    const got = {
      approve: await refusal(decideHandoff(h.db, actor, { handoffId: parkedA.handoffId, decision: "approve", version: parkedA.version })),
      claim: await refusal(claimHandoff(h.db, actor, parkedA.handoffId)),
      takeOver: await refusal(takeOverConversation(h.db, actor, parkedA.conversationId)),
      reply: await refusal(replyAsStaff(h.db, actor, parkedA.conversationId, "hi")),
      handoffDetail: await refusal(handoffDetail(h.db, globex.id, parkedA.handoffId)),
      conversationDetail: await refusal(conversationDetail(h.db, globex.id, parkedA.conversationId)),
    };
    expect(got).toEqual({
      approve: "NOT_FOUND",
      claim: "NOT_FOUND",
      takeOver: "NOT_FOUND",
      reply: "NOT_FOUND",
      handoffDetail: "NOT_FOUND",
      conversationDetail: "NOT_FOUND",
    });
    const handoff = await h.db.handoff.findUniqueOrThrow({ where: { id: parkedA.handoffId } });
    expect({ status: handoff.status, claimedById: handoff.claimedById }).toEqual({ status: "PENDING", claimedById: null });
  });

  it("globex's supervisor finds none of acme's runs, metrics, queue items, events or audit records", async () => {
    const { runReview, searchRuns, runFilterSchema, exportRuns } = await import("@/lib/console/runs");
    const { shopMetrics, resolvePeriod } = await import("@/lib/console/metrics");
    const { queueHandoffs, consoleEvents } = await import("@/lib/console/queries");
    const { queueFilterSchema } = await import("@/lib/console/filters");
    const { listAuditRecords } = await import("@/lib/settings/audit");
    const { retryDeadLetter } = await import("@/lib/runtime/retry-dead-letter");
    const viewer = { tenantId: globex.id, role: "supervisor" as const };
    expect(await refusal(runReview(h.db, viewer, parkedA.runId))).toBe("NOT_FOUND");
    expect(
      await refusal(
        retryDeadLetter(
          storeOf(h.db),
          { tenantId: globex.id, staffId: globexSupervisor.id, role: "supervisor", email: globexSupervisor.email },
          parkedA.runId,
        ),
      ),
    ).toBe("NOT_FOUND");
    for (const q of [parkedA.runId, parkedA.conversationId, "A-1002", "dana@example.com"]) {
      const page = await searchRuns(h.db, viewer, runFilterSchema.parse({ q }), { count: true });
      expect({ q, runs: page.runs.length, total: page.total }).toEqual({ q, runs: 0, total: 0 });
    }
    const exported: unknown[] = [];
    for await (const r of await exportRuns(h.db, viewer, runFilterSchema.parse({}))) exported.push(r);
    expect(exported).toEqual([]);
    const acmeMetrics = await shopMetrics(h.db, { tenantId: h.acme.id, role: "supervisor" }, resolvePeriod({}));
    expect(acmeMetrics.runs.runs).toBeGreaterThan(0);
    const metrics = await shopMetrics(h.db, viewer, resolvePeriod({}));
    expect({ runs: metrics.runs.runs, spend: metrics.spend.micros, conversations: metrics.conversations.all }).toEqual({
      runs: 0,
      spend: 0,
      conversations: 0,
    });
    const queue = await queueHandoffs(
      h.db,
      { tenantId: globex.id, staffId: globexSupervisor.id },
      queueFilterSchema.parse({ status: "all" }),
    );
    expect(queue).toEqual([]);
    const events = await consoleEvents(h.db, globex.id, 0n);
    expect(events.events.filter((e) => e.conversationId === parkedA.conversationId)).toEqual([]);
    const oneConversation = await consoleEvents(h.db, globex.id, 0n, parkedA.conversationId);
    expect(oneConversation.events).toEqual([]);
    const audit = await listAuditRecords(h.db, { tenantId: globex.id, staffId: globexAdmin.id });
    expect(audit.records.filter((r) => r.runId === parkedA.runId || r.subject === parkedA.handoffId)).toEqual([]);
  });
});

describe("shop B's API token against shop A ", () => {
  it("reads nothing of acme's and cannot decide acme's handoff, even naming acme's admin as the actor", async () => {
    const got = {
      handoff: (await api("GET", `/handoffs/${parkedA.handoffId}`, { token: globexToken })).status,
      run: (await api("GET", `/runs/${parkedA.runId}`, { token: globexToken })).status,
      decide: (
        await api("POST", `/handoffs/${parkedA.handoffId}/decision`, {
          token: globexToken,
          body: { decision: "approve", version: parkedA.version, actor: "ada@acme.test" },
        })
      ).status,
    };
    expect(got).toEqual({ handoff: 404, run: 404, decide: 404 });
    const list = await api("GET", "/handoffs?status=PENDING", { token: globexToken });
    expect(list.body.data.filter((x: { id: string }) => x.id === parkedA.handoffId)).toEqual([]);
    const byCustomer = await api("GET", `/conversations?customer=${encodeURIComponent("dana@example.com")}`, { token: globexToken });
    expect(byCustomer.body.data).toEqual([]);
    expect((await h.db.handoff.findUniqueOrThrow({ where: { id: parkedA.handoffId } })).status).toBe("PENDING");
  });
});

describe("shop B's widget customer and agent against shop A ", () => {
  it("the agent of globex, told to look up and refund an acme order number, finds nothing and does nothing", async () => {
    const effectsBefore = (await h.effects()).length;
    const a1002 = await h.db.order.findFirstOrThrow({ where: { tenantId: h.acme.id, number: "A-1002" } });
    // Hank (globex, signed in) — the model names acme's order numbers in its tool calls.
    h.script.push({
      reply: {
        content: [
          { type: "tool_use", id: "toolu_probe_lookup", name: "lookup_order", input: { order_number: "A-1002" } },
          {
            type: "tool_use",
            id: "toolu_probe_refund",
            name: "refund_order",
            input: { order_number: "A-1002", amount_cents: 5000, reason: "x" },
          },
        ],
        stop_reason: "tool_use",
      },
    });
    const out = await say(h.deps, { tenant: "globex", text: "What about order A-1002? Refund it.", customerEmail: "hank@globex.test" });
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId! }, orderBy: { position: "asc" } });
    const lookup = calls.find((c) => c.name === "lookup_order")!;
    const refund = calls.find((c) => c.name === "refund_order")!;
    expect(JSON.stringify(lookup.result)).not.toContain("25000");
    expect(JSON.stringify(lookup.result)).not.toMatch(/Alder|Portland|1Z9A7E3W/);
    expect(lookup.isError).toBe(true);
    expect(refund.status).not.toBe("SUCCEEDED");
    expect((await h.effects()).length).toBe(effectsBefore);
    expect((await h.db.order.findUniqueOrThrow({ where: { id: a1002.id } })).refundedCents).toBe(0);
  });

  it("a globex visitor's conversation token opens nothing at acme's widget", async () => {
    const { openConversation } = await import("@/lib/conversations/intake");
    const { token } = await openConversation(h.db, { tenantId: globex.id });
    const conversationRoute = await import("@/app/api/widget/[shop]/conversation/route");
    const messagesRoute = await import("@/app/api/widget/[shop]/messages/route");
    const headers = { "content-type": "application/json", "sec-fetch-site": "same-origin", authorization: `Bearer ${token}` };
    const params = { params: Promise.resolve({ shop: "acme" }) };
    const view = await conversationRoute.GET(new Request("http://localhost/api/widget/acme/conversation?after=0", { headers }), params);
    const send = await messagesRoute.POST(
      new Request("http://localhost/api/widget/acme/messages", { method: "POST", headers, body: JSON.stringify({ text: "hello" }) }),
      params,
    );
    expect({ view: view.status, send: send.status }).toEqual({ view: 404, send: 404 });
  });

  it("acme's handoff events are never queued for a webhook endpoint of globex", async () => {
    const { createWebhookEndpoint } = await import("@/lib/settings/webhooks");
    const { fanOutWebhookEvents } = await import("@/lib/webhooks/outbox");
    const { endpoint } = await createWebhookEndpoint(
      h.db,
      { tenantId: globex.id, staffId: globexAdmin.id },
      { url: "https://hooks.example/globex", eventTypes: ["handoff.created", "handoff.decided", "escalation.created", "run.completed"] },
    );
    await h.parkRefund(20000);
    await fanOutWebhookEvents(storeOf(h.db));
    const deliveries = await h.db.webhookDelivery.findMany({ where: { endpointId: endpoint.id }, include: { event: true } });
    expect(deliveries.filter((d) => d.event.tenantId !== globex.id)).toEqual([]);
  });
});
