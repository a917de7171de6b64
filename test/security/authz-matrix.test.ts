import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { encode } from "next-auth/jwt";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { issueApiToken } from "@/lib/api/tokens";
import { createWebhookEndpoint } from "@/lib/settings/webhooks";
import { httpStatusFor } from "@/lib/errors";
import { getAuthOptions } from "@/lib/auth/options";
import { claimsOfStaff } from "@/lib/auth/staff-context";
import { openConversation } from "@/lib/conversations/intake";
import { createHarness, type Harness } from "../runtime-harness";
import { resultsFor } from "./results";

// The authorization matrix: every server action (modules marked "use server" in app/ and lib/) and every route handler
// (app/**/route.ts) × every kind of caller → the answer expected. Real handlers on a real database and runtime, called
// inside a real Next.js request scope: a staff caller carries a next-auth session cookie signed with the app's secret,
// which next-auth itself reads (cookies() / headers()) and decodes. A new action or route without a row fails
// "every action and route has a row".

// Next's request scope lives in AsyncLocalStorage, which its server installs globally before loading anything.
vi.hoisted(async () => {
  const { AsyncLocalStorage } = await import("node:async_hooks");
  (globalThis as { AsyncLocalStorage?: unknown }).AsyncLocalStorage ??= AsyncLocalStorage;
});
// `after()` needs the server's after-response machinery: the work runs now and the test waits for it.
const afterWork: Promise<unknown>[] = [];
vi.mock("next/server", async (original) => ({
  ...(await original<typeof import("next/server")>()),
  after: (fn: () => unknown) => afterWork.push(Promise.resolve().then(fn)),
}));

/** Runs `fn` as Next.js runs a route handler or server action for a request with these headers. */
async function inRequestScope<T>(headers: Headers, fn: () => Promise<T>): Promise<T> {
  const { workAsyncStorage } = await import("next/dist/server/app-render/work-async-storage.external.js");
  const { workUnitAsyncStorage } = await import("next/dist/server/app-render/work-unit-async-storage.external.js");
  const { RequestCookies } = await import("next/dist/server/web/spec-extension/cookies.js");
  const work = { route: "/authz-matrix", forceStatic: false, dynamicShouldError: false };
  const unit = {
    type: "request",
    phase: "action",
    headers,
    cookies: new RequestCookies(headers),
    mutableCookies: new RequestCookies(headers),
    userspaceMutableCookies: new RequestCookies(headers),
  };
  return workAsyncStorage.run(work as never, () => workUnitAsyncStorage.run(unit as never, fn));
}

const PRINCIPALS = ["anonymous", "customer", "otherShop", "overAuthority", "reviewer", "supervisor", "admin"] as const;
type Principal = (typeof PRINCIPALS)[number];
const STAFF_OF: Partial<Record<Principal, keyof Harness["staff"]>> = {
  otherShop: "gus",
  overAuthority: "rita",
  reviewer: "raj",
  supervisor: "sol",
  admin: "ada",
};

/** An answer: the HTTP status and the refusal code — or OK / TARGET (the answer names or holds the target's data). */
interface Answer {
  status: number;
  code: string;
}

const MARKER = "target-7731-marker";
let h: Harness;
const cookies: Partial<Record<Principal, string>> = {};
let tokens: { acme: string; globex: string };
let otherConversationToken: string;
let target: { conversationId: string; runId: string; handoffId: string };

async function cookieFor(who: keyof Harness["staff"]) {
  const staff = await h.db.staffUser.findUniqueOrThrow({ where: { id: h.staff[who].id }, include: { tenant: true } });
  const claims = claimsOfStaff(staff);
  const jwt = await encode({ token: { ...claims, sub: claims.staffId }, secret: getAuthOptions().secret! });
  return `next-auth.session-token=${jwt}`;
}

async function judge(status: number, body: string): Promise<Answer> {
  if (status >= 200 && status < 300) {
    const seen = [MARKER, ...(target ? [target.conversationId, target.handoffId, target.runId] : [])].some((t) => body.includes(t));
    return { status, code: seen ? "TARGET" : "OK" };
  }
  let code = "?";
  try {
    const parsed = JSON.parse(body);
    code = parsed?.error?.code ?? parsed?.code ?? "?";
  } catch {
    /* not JSON */
  }
  return { status, code };
}

async function asAction(p: Principal, run: () => Promise<unknown>): Promise<Answer> {
  const headers = new Headers();
  if (cookies[p]) headers.set("cookie", cookies[p]!);
  const result = (await inRequestScope(headers, run)) as { ok: boolean; error?: { code: string } };
  if (!result.ok) return { status: httpStatusFor(result.error!.code as never), code: result.error!.code };
  return judge(200, JSON.stringify(result));
}

type Handler = (req: Request, ctx: { params: Promise<Record<string, unknown>> }) => Promise<Response>;

async function asRequest(
  p: Principal,
  handler: Handler,
  url: string,
  o: { method?: string; params?: Record<string, unknown>; body?: unknown; bearer?: "widget" | "api"; actor?: boolean } = {},
): Promise<Answer> {
  const headers = new Headers();
  if (cookies[p]) headers.set("cookie", cookies[p]!);
  // A customer presents the token of their own (other) conversation; an API caller its shop's token.
  if (p === "customer") headers.set("authorization", `Bearer ${otherConversationToken}`);
  else if (o.bearer === "api" && STAFF_OF[p]) headers.set("authorization", `Bearer ${p === "otherShop" ? tokens.globex : tokens.acme}`);
  let body: string | undefined;
  if (o.body !== undefined) {
    headers.set("content-type", "application/json");
    const actor = STAFF_OF[p] ? h.staff[STAFF_OF[p]!].email : "nobody@example.com";
    body = JSON.stringify(o.actor ? { ...(o.body as object), actor } : o.body);
  }
  const abort = new AbortController();
  try {
    const { NextRequest } = await import("next/server");
    const req = new NextRequest(`http://localhost${url}`, { method: o.method ?? "GET", headers, body, signal: abort.signal });
    const res = await inRequestScope(headers, () => handler(req, { params: Promise.resolve(o.params ?? {}) }));
    // A live stream (text/event-stream) is answered; its content is not waited for.
    const text = res.headers.get("content-type")?.includes("event-stream") ? "" : await res.text();
    await Promise.allSettled(afterWork.splice(0));
    return judge(res.status, text);
  } finally {
    abort.abort();
  }
}

// --- the rows -----------------------------------------------------------------------------------------------------
type Expect = Record<Principal, string>; // "200 OK", "401 UNAUTHENTICATED", …
interface Row {
  call: (p: Principal) => Promise<Answer>;
  expect: Expect;
}

const row = (call: Row["call"], expect: Expect): Row => ({ call, expect });
const ALL = (a: string): Expect => Object.fromEntries(PRINCIPALS.map((p) => [p, a])) as Expect;
const STAFF_ONLY = (others: Partial<Expect>): Expect => ({
  anonymous: "401 UNAUTHENTICATED",
  customer: "401 UNAUTHENTICATED",
  otherShop: "404 NOT_FOUND",
  overAuthority: "200 TARGET",
  reviewer: "200 TARGET",
  supervisor: "200 TARGET",
  admin: "200 TARGET",
  ...others,
});
const ADMIN_ONLY: Expect = {
  anonymous: "401 UNAUTHENTICATED",
  customer: "401 UNAUTHENTICATED",
  otherShop: "403 FORBIDDEN",
  overAuthority: "403 FORBIDDEN",
  reviewer: "403 FORBIDDEN",
  supervisor: "403 FORBIDDEN",
  admin: "200 OK",
};
const SUPERVISORS: Expect = {
  anonymous: "401 UNAUTHENTICATED",
  customer: "401 UNAUTHENTICATED",
  otherShop: "403 FORBIDDEN",
  overAuthority: "403 FORBIDDEN",
  reviewer: "403 FORBIDDEN",
  supervisor: "200 TARGET",
  admin: "200 TARGET",
};
const API: Expect = {
  anonymous: "401 UNAUTHENTICATED",
  customer: "401 UNAUTHENTICATED",
  otherShop: "404 NOT_FOUND",
  overAuthority: "200 TARGET",
  reviewer: "200 TARGET",
  supervisor: "200 TARGET",
  admin: "200 TARGET",
};
const WIDGET_WITH_TOKEN: Expect = { ...ALL("401 UNAUTHENTICATED"), customer: "200 OK" };

/** An endpoint of acme's, added by its admin, for a row that acts on one. */
const adminEndpoint = async (p: Principal) => {
  // A shop has at most 20 endpoints: the ones earlier rows made go first (their deliveries with them).
  await h.db.$executeRawUnsafe(`DELETE FROM "WebhookEndpoint" WHERE "tenantId" = $1`, h.acme.id);
  return createWebhookEndpoint(
    h.db,
    { tenantId: h.acme.id, staffId: h.staff.ada.id },
    { url: `https://hooks.example/${p}-${Date.now()}`, eventTypes: ["handoff.created"] },
  );
};

const mod = (file: string) => import(/* @vite-ignore */ path.join(process.cwd(), file));
const action = async (file: string, name: string) => (await mod(file))[name] as (input: unknown) => Promise<unknown>;
const route = async (file: string, method: string) => (await mod(file))[method] as Handler;

const ROWS: Record<string, Row> = {
  // Console server actions
  "lib/actions/console.ts#claimHandoffAction": row(async (p) => {
    const t = await h.parkRefund(46000, MARKER);
    return asAction(p, async () => (await action("lib/actions/console.ts", "claimHandoffAction"))({ handoffId: t.handoffId }));
  }, STAFF_ONLY({})),
  "lib/actions/console.ts#releaseHandoffAction": row(async (p) => {
    const t = await h.parkRefund(46000, MARKER);
    return asAction(p, async () => (await action("lib/actions/console.ts", "releaseHandoffAction"))({ handoffId: t.handoffId }));
  }, STAFF_ONLY({})),
  "lib/actions/console.ts#decideHandoffAction": row(
    async (p) => {
      const t = await h.parkRefund(46000, MARKER); // $460: above Rita's $300 authority, two approvers
      return asAction(p, async () =>
        (await action("lib/actions/console.ts", "decideHandoffAction"))({
          handoffId: t.handoffId,
          decision: "approve",
          version: t.version,
        }),
      );
    },
    STAFF_ONLY({ overAuthority: "403 OVER_AUTHORITY" }),
  ),
  "lib/actions/console.ts#takeOverConversationAction": row(async (p) => {
    const t = await h.parkRefund(15000, MARKER);
    return asAction(p, async () =>
      (await action("lib/actions/console.ts", "takeOverConversationAction"))({ conversationId: t.conversationId }),
    );
  }, STAFF_ONLY({})),
  "lib/actions/console.ts#replyAsStaffAction": row(async (p) => {
    const t = await h.parkRefund(15000, MARKER);
    return asAction(p, async () => {
      await (await action("lib/actions/console.ts", "takeOverConversationAction"))({ conversationId: t.conversationId });
      return (await action("lib/actions/console.ts", "replyAsStaffAction"))({
        conversationId: t.conversationId,
        text: "Hello from the team.",
      });
    });
  }, STAFF_ONLY({})),
  "lib/actions/console.ts#handBackConversationAction": row(async (p) => {
    const t = await h.parkRefund(15000, MARKER);
    return asAction(p, async () => {
      await (await action("lib/actions/console.ts", "takeOverConversationAction"))({ conversationId: t.conversationId });
      return (await action("lib/actions/console.ts", "handBackConversationAction"))({ conversationId: t.conversationId });
    });
  }, STAFF_ONLY({})),
  "lib/actions/console.ts#retryDeadLetterAction": row(
    async (p) => {
      // A run the provider refused outright (a 400 is not retried): dead-lettered at once.
      h.script.push({ http: 400 });
      const out = await h.say("hi, where is my order?");
      expect(out.phase).toBe("DEAD_LETTER");
      return asAction(p, async () => (await action("lib/actions/console.ts", "retryDeadLetterAction"))({ runId: out.runId }));
    },
    { ...SUPERVISORS, supervisor: "200 OK", admin: "200 OK" },
  ),
  // Settings (admins)
  "lib/actions/settings.ts#previewPolicyAction": row(async (p) => {
    const rules = (await h.db.policyVersion.findFirstOrThrow({ where: { tenantId: h.acme.id }, orderBy: { version: "desc" } })).rules;
    return asAction(p, async () => (await action("lib/actions/settings.ts", "previewPolicyAction"))({ rules }));
  }, ADMIN_ONLY),
  "lib/actions/settings.ts#publishPolicyAction": row(async (p) => {
    const tenant = await h.db.tenant.findUniqueOrThrow({ where: { id: h.acme.id } });
    const base = await h.db.policyVersion.findFirstOrThrow({ where: { tenantId: h.acme.id, version: tenant.policyVersion } });
    const rules = structuredClone(base.rules) as { approvalTtlHours: number };
    rules.approvalTtlHours = (rules.approvalTtlHours % 48) + 1;
    return asAction(p, async () =>
      (await action("lib/actions/settings.ts", "publishPolicyAction"))({ baseVersion: tenant.policyVersion, rules }),
    );
  }, ADMIN_ONLY),
  "lib/actions/settings.ts#inviteStaffAction": row(async (p) => {
    const email = `new-${p}-${Date.now()}@acme.test`;
    return asAction(p, async () =>
      (await action("lib/actions/settings.ts", "inviteStaffAction"))({ name: "New", email, role: "reviewer", authorityLimitCents: 1000 }),
    );
  }, ADMIN_ONLY),
  "lib/actions/settings.ts#resendInviteAction": row(async (p) => {
    const invited = await h.db.staffUser.create({
      data: { tenantId: h.acme.id, email: `invitee-${p}-${Date.now()}@acme.test`, name: "Invitee", role: "reviewer", passwordHash: null },
    });
    return asAction(p, async () => (await action("lib/actions/settings.ts", "resendInviteAction"))({ staffId: invited.id }));
  }, ADMIN_ONLY),
  "lib/actions/settings.ts#updateStaffAction": row(
    (p) =>
      asAction(p, async () =>
        (await action("lib/actions/settings.ts", "updateStaffAction"))({
          staffId: h.staff.raj.id,
          role: "reviewer",
          authorityLimitCents: 100000,
        }),
      ),
    ADMIN_ONLY,
  ),
  "lib/actions/settings.ts#setStaffActiveAction": row(
    (p) =>
      asAction(p, async () => (await action("lib/actions/settings.ts", "setStaffActiveAction"))({ staffId: h.staff.raj.id, active: true })),
    ADMIN_ONLY,
  ),
  "lib/actions/settings.ts#rotateWidgetSecretAction": row(
    (p) => asAction(p, async () => (await action("lib/actions/settings.ts", "rotateWidgetSecretAction"))({ overlapHours: 1 })),
    ADMIN_ONLY,
  ),
  "lib/actions/settings.ts#addAllowedOriginAction": row(
    (p) =>
      asAction(p, async () => (await action("lib/actions/settings.ts", "addAllowedOriginAction"))({ origin: `https://${p}.shop.example` })),
    ADMIN_ONLY,
  ),
  "lib/actions/settings.ts#removeAllowedOriginAction": row(async (p) => {
    // Allowed first by the admin, through the action itself.
    const origin = `https://remove-${p}.shop.example`;
    const added = await asAction("admin", async () => (await action("lib/actions/settings.ts", "addAllowedOriginAction"))({ origin }));
    expect(added.status).toBe(200);
    return asAction(p, async () => (await action("lib/actions/settings.ts", "removeAllowedOriginAction"))({ origin }));
  }, ADMIN_ONLY),
  "lib/actions/api-tokens.ts#createApiTokenAction": row(
    (p) =>
      asAction(p, async () =>
        (await action("lib/actions/api-tokens.ts", "createApiTokenAction"))({ name: `t-${p}`, scopes: ["handoffs:read"] }),
      ),
    ADMIN_ONLY,
  ),
  "lib/actions/api-tokens.ts#revokeApiTokenAction": row(async (p) => {
    const { apiToken } = await issueApiToken(h.db, {
      tenantId: h.acme.id,
      name: `r-${p}`,
      scopes: ["handoffs:read"],
      issuedBy: { operator: true },
    });
    return asAction(p, async () => (await action("lib/actions/api-tokens.ts", "revokeApiTokenAction"))({ tokenId: apiToken.id }));
  }, ADMIN_ONLY),
  "lib/actions/webhooks.ts#createWebhookEndpointAction": row(
    (p) =>
      asAction(p, async () =>
        (await action("lib/actions/webhooks.ts", "createWebhookEndpointAction"))({
          url: `https://hooks.example/${p}`,
          eventTypes: ["handoff.created"],
        }),
      ),
    ADMIN_ONLY,
  ),
  "lib/actions/webhooks.ts#setWebhookEndpointEnabledAction": row(async (p) => {
    const { endpoint } = await adminEndpoint(p);
    return asAction(p, async () =>
      (await action("lib/actions/webhooks.ts", "setWebhookEndpointEnabledAction"))({ endpointId: endpoint.id, enabled: false }),
    );
  }, ADMIN_ONLY),
  "lib/actions/webhooks.ts#deleteWebhookEndpointAction": row(async (p) => {
    const { endpoint } = await adminEndpoint(p);
    return asAction(p, async () => (await action("lib/actions/webhooks.ts", "deleteWebhookEndpointAction"))({ endpointId: endpoint.id }));
  }, ADMIN_ONLY),
  "lib/actions/webhooks.ts#sendTestWebhookAction": row(async (p) => {
    const { endpoint } = await adminEndpoint(p);
    return asAction(p, async () => (await action("lib/actions/webhooks.ts", "sendTestWebhookAction"))({ endpointId: endpoint.id }));
  }, ADMIN_ONLY),
  // The invitation link is the credential: a session grants nothing here, a wrong link is refused for everyone.
  "lib/actions/invite.ts#acceptInviteAction": row(
    (p) =>
      asAction(p, async () =>
        (await action("lib/actions/invite.ts", "acceptInviteAction"))({ token: "not-a-real-invitation", password: "x".repeat(20) }),
      ),
    ALL("404 NOT_FOUND"),
  ),

  // Console routes
  "app/api/console/conversations/[id]/route.ts GET": row(
    async (p) =>
      asRequest(p, await route("app/api/console/conversations/[id]/route.ts", "GET"), "/api/console/conversations/x", {
        params: { id: target.conversationId },
      }),
    STAFF_ONLY({}),
  ),
  "app/api/console/events/route.ts GET": row(
    async (p) => asRequest(p, await route("app/api/console/events/route.ts", "GET"), "/api/console/events"),
    { ...STAFF_ONLY({}), otherShop: "200 OK", overAuthority: "200 OK", reviewer: "200 OK", supervisor: "200 OK", admin: "200 OK" },
  ),
  "app/api/console/handoffs/[id]/route.ts GET": row(
    async (p) =>
      asRequest(p, await route("app/api/console/handoffs/[id]/route.ts", "GET"), "/api/console/handoffs/x", {
        params: { id: target.handoffId },
      }),
    STAFF_ONLY({}),
  ),
  "app/api/console/queue/route.ts GET": row(
    async (p) => asRequest(p, await route("app/api/console/queue/route.ts", "GET"), "/api/console/queue"),
    STAFF_ONLY({ otherShop: "200 OK" }),
  ),
  "app/api/console/runs/[id]/route.ts GET": row(
    async (p) =>
      asRequest(p, await route("app/api/console/runs/[id]/route.ts", "GET"), "/api/console/runs/x", { params: { id: target.runId } }),
    SUPERVISORS,
  ),
  "app/api/console/runs/export/route.ts GET": row(
    async (p) => asRequest(p, await route("app/api/console/runs/export/route.ts", "GET"), "/api/console/runs/export?format=jsonl"),
    SUPERVISORS,
  ),
  "app/api/health/route.ts GET": row(
    async (p) => asRequest(p, await route("app/api/health/route.ts", "GET"), "/api/health"),
    ALL("200 OK"),
  ),
  // next-auth's own handler: the session it reports is always the caller's own, and a password is needed to sign in.
  "app/api/auth/[...nextauth]/route.ts GET": row(
    async (p) => {
      const headers = new Headers(cookies[p] ? { cookie: cookies[p]! } : {});
      const { NextRequest } = await import("next/server");
      const handler = await route("app/api/auth/[...nextauth]/route.ts", "GET");
      const res = await inRequestScope(headers, () =>
        handler(new NextRequest("http://localhost/api/auth/session", { headers }), { params: Promise.resolve({ nextauth: ["session"] }) }),
      );
      const email = ((await res.json()) as { user?: { email?: string } }).user?.email ?? null;
      const own = STAFF_OF[p] ? h.staff[STAFF_OF[p]!].email : null;
      return { status: res.status, code: email === own ? (email ? "OWN" : "NONE") : `OTHER:${email}` };
    },
    { ...ALL("200 OWN"), anonymous: "200 NONE", customer: "200 NONE" },
  ),
  "app/api/auth/[...nextauth]/route.ts POST": row(async (p) => {
    const headers = new Headers({ "content-type": "application/x-www-form-urlencoded", ...(cookies[p] ? { cookie: cookies[p]! } : {}) });
    const { NextRequest } = await import("next/server");
    const handler = await route("app/api/auth/[...nextauth]/route.ts", "POST");
    const body = new URLSearchParams({
      email: "ada@acme.test",
      password: "not-her-password",
      csrfToken: "forged",
      json: "true",
    }).toString();
    const res = await inRequestScope(headers, () =>
      handler(new NextRequest("http://localhost/api/auth/callback/credentials", { method: "POST", headers, body }), {
        params: Promise.resolve({ nextauth: ["callback", "credentials"] }),
      }),
    );
    const signedIn = res.headers.getSetCookie().some((c) => /session-token=[^;]+/.test(c));
    return { status: res.status, code: signedIn ? "SIGNED_IN" : "REFUSED" };
  }, ALL("200 REFUSED")),

  // The JSON API (shop tokens; a decision names the staff member it is made for)
  "app/api/v1/conversations/route.ts GET": row(
    async (p) => asRequest(p, await route("app/api/v1/conversations/route.ts", "GET"), "/api/v1/conversations", { bearer: "api" }),
    { ...API, otherShop: "200 OK" },
  ),
  "app/api/v1/handoffs/route.ts GET": row(
    async (p) => asRequest(p, await route("app/api/v1/handoffs/route.ts", "GET"), "/api/v1/handoffs", { bearer: "api" }),
    { ...API, otherShop: "200 OK" },
  ),
  "app/api/v1/handoffs/[id]/route.ts GET": row(
    async (p) =>
      asRequest(p, await route("app/api/v1/handoffs/[id]/route.ts", "GET"), "/api/v1/handoffs/x", {
        bearer: "api",
        params: { id: target.handoffId },
      }),
    API,
  ),
  "app/api/v1/handoffs/[id]/decision/route.ts POST": row(
    async (p) => {
      const t = await h.parkRefund(46000, MARKER);
      return asRequest(p, await route("app/api/v1/handoffs/[id]/decision/route.ts", "POST"), "/api/v1/handoffs/x/decision", {
        method: "POST",
        bearer: "api",
        actor: true,
        params: { id: t.handoffId },
        body: { decision: "approve", version: t.version },
      });
    },
    { ...API, overAuthority: "403 OVER_AUTHORITY" },
  ),
  "app/api/v1/runs/[id]/route.ts GET": row(
    async (p) =>
      asRequest(p, await route("app/api/v1/runs/[id]/route.ts", "GET"), "/api/v1/runs/x", { bearer: "api", params: { id: target.runId } }),
    API,
  ),
  "app/api/v1/openapi.json/route.ts GET": row(
    async (p) => asRequest(p, await route("app/api/v1/openapi.json/route.ts", "GET"), "/api/v1/openapi.json"),
    ALL("200 OK"),
  ),

  // The widget: the conversation token is the only credential; a staff session opens no customer's conversation.
  "app/api/widget/[shop]/conversation/route.ts POST": row(
    async (p) =>
      asRequest(p, await route("app/api/widget/[shop]/conversation/route.ts", "POST"), "/api/widget/acme/conversation", {
        method: "POST",
        params: { shop: "acme" },
        body: {},
      }),
    ALL("200 OK"),
  ),
  "app/api/widget/[shop]/conversation/route.ts GET": row(
    async (p) =>
      asRequest(p, await route("app/api/widget/[shop]/conversation/route.ts", "GET"), "/api/widget/acme/conversation", {
        params: { shop: "acme" },
      }),
    WIDGET_WITH_TOKEN,
  ),
  "app/api/widget/[shop]/events/route.ts GET": row(
    async (p) =>
      asRequest(p, await route("app/api/widget/[shop]/events/route.ts", "GET"), "/api/widget/acme/events?cursor=0", {
        params: { shop: "acme" },
      }),
    WIDGET_WITH_TOKEN,
  ),
  "app/api/widget/[shop]/human/route.ts POST": row(
    async (p) =>
      asRequest(p, await route("app/api/widget/[shop]/human/route.ts", "POST"), "/api/widget/acme/human", {
        method: "POST",
        params: { shop: "acme" },
      }),
    WIDGET_WITH_TOKEN,
  ),
  "app/api/widget/[shop]/messages/route.ts POST": row(
    async (p) =>
      asRequest(p, await route("app/api/widget/[shop]/messages/route.ts", "POST"), "/api/widget/acme/messages", {
        method: "POST",
        params: { shop: "acme" },
        body: { text: "What is the status of my order?" },
      }),
    { ...WIDGET_WITH_TOKEN, customer: "202 OK" },
  ),
};

// --- what exists ----------------------------------------------------------------------------------------------------
function filesUnder(dir: string, keep: (file: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules" && entry.name !== "generated") out.push(...filesUnder(full, keep));
    } else if (keep(full)) out.push(path.relative(process.cwd(), full));
  }
  return out;
}

const HTTP_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/** Every exported server action and route handler method, by the file system and the modules' exports. */
async function everythingCallable(): Promise<string[]> {
  const sources = ["app", "lib"].flatMap((d) => filesUnder(d, (f) => /\.(ts|tsx)$/.test(f) && !/\.test\.tsx?$/.test(f)));
  const actionFiles = sources.filter((f) => /^\s*(\/\/[^\n]*\n\s*)*["']use server["']/.test(readFileSync(f, "utf8")));
  const routeFiles = sources.filter((f) => f.startsWith("app/") && /(^|\/)route\.tsx?$/.test(f));
  const keys: string[] = [];
  for (const f of actionFiles)
    for (const [name, value] of Object.entries(await mod(f))) if (typeof value === "function") keys.push(`${f}#${name}`);
  for (const f of routeFiles) for (const name of Object.keys(await mod(f))) if (HTTP_METHODS.includes(name)) keys.push(`${f} ${name}`);
  return keys.sort();
}

const results = resultsFor("authz-matrix");

beforeAll(async () => {
  h = await createHarness();
  // The app's own process-wide database client and runtime are this test's.
  // (lib/db/client keeps the object it found at import: its client is set, not the object replaced)
  const g = globalThis as { __supportPrisma?: { client?: Promise<unknown> } };
  (g.__supportPrisma ??= {}).client = Promise.resolve(h.db);
  (globalThis as { __supportRuntime?: Promise<unknown> }).__supportRuntime = Promise.resolve(h.deps);
  for (const p of PRINCIPALS) if (STAFF_OF[p]) cookies[p] = await cookieFor(STAFF_OF[p]!);
  const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
  const issue = (tenantId: string) =>
    issueApiToken(h.db, {
      tenantId,
      name: "matrix",
      scopes: ["handoffs:read", "handoffs:decide", "runs:read", "conversations:read"],
      issuedBy: { operator: true },
    });
  tokens = { acme: (await issue(h.acme.id)).token, globex: (await issue(globex.id)).token };
  otherConversationToken = (await openConversation(h.db, { tenantId: h.acme.id })).token;
  target = await h.parkRefund(46000, MARKER);
});
afterAll(async () => {
  results.write();
  delete (globalThis as { __supportPrisma?: { client?: unknown } }).__supportPrisma?.client;
  delete (globalThis as { __supportRuntime?: unknown }).__supportRuntime;
  await h?.close();
});

describe("authorization matrix", () => {
  it("every server action and route handler has a row (and every row still exists)", async () => {
    const callable = await everythingCallable();
    expect(callable.length).toBeGreaterThan(20);
    expect(Object.keys(ROWS).sort()).toEqual(callable);
  });

  const cells = Object.entries(ROWS).flatMap(([key, r]) => PRINCIPALS.map((p) => [key, p, r] as const));
  it.each(cells)("%s as %s", async (key, p, r) => {
    const answer = await r.call(p);
    const got = `${answer.status} ${answer.code}`;
    results.record(`${key} × ${p}`, got === r.expect[p] ? [] : [`expected ${r.expect[p]}, got ${got}`]);
    expect(got).toBe(r.expect[p]);
  });
});
