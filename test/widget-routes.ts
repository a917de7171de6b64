// Calls the widget's route handlers (app/api/widget/[shop]/*) as Next.js would: a Request and the route's params, on
// a private test database. The handlers use the process-wide client and runtime, so the test points DATABASE_URL at
// its database before their first use. A test file using this must mock `next/server`'s `after` with
// `afterCallbacks` (outside a Next request there is no scope to run it in): the work is then run when the test says.
import * as conversationRoute from "@/app/api/widget/[shop]/conversation/route";
import * as eventsRoute from "@/app/api/widget/[shop]/events/route";
import * as humanRoute from "@/app/api/widget/[shop]/human/route";
import * as messagesRoute from "@/app/api/widget/[shop]/messages/route";
import { disconnectPrisma } from "@/lib/db/client";
import type { PolicyRulesInput } from "@/lib/policy/policy";
import { DEMO_POLICY_RULES } from "@/lib/setup/seed";
import type { WidgetView } from "@/lib/widget/api-types";
import { SseParser } from "@/lib/widget/sse-parser";
import { createTestDatabase, type TestDatabase } from "./db";

/** What `after()` was handed, waiting to be run by `runAfterCallbacks`. */
export const afterCallbacks: Array<() => unknown> = [];

export async function runAfterCallbacks(): Promise<void> {
  while (afterCallbacks.length) await afterCallbacks.shift()!();
}

export interface WidgetAnswer {
  status: number;
  headers: Headers;
  body: any;
}

export interface WidgetRoutes {
  tdb: TestDatabase;
  start(opts?: { ip?: string; shop?: string; token?: string }): Promise<WidgetAnswer>;
  send(
    token: string,
    body: BodyInit | unknown,
    opts?: { ip?: string; shop?: string; raw?: boolean; headers?: Record<string, string> },
  ): Promise<WidgetAnswer>;
  human(token: string, opts?: { ip?: string; shop?: string }): Promise<WidgetAnswer>;
  view(token: string, opts?: { ip?: string; shop?: string }): Promise<WidgetAnswer>;
  /** GET /events (`query`: e.g. "view=1&after=3"); the Response is returned as it is, its body a live stream. */
  events(token: string, opts?: { query?: string; cursor?: string; ip?: string; signal?: AbortSignal }): Promise<Response>;
  close(): Promise<void>;
}

const origin = "http://localhost";

function headersFor(opts: { ip?: string; token?: string; headers?: Record<string, string> }) {
  const h = new Headers(opts.headers);
  if (!h.has("content-type")) h.set("content-type", "application/json");
  h.set("sec-fetch-site", "same-origin");
  if (opts.ip) h.set("x-forwarded-for", opts.ip);
  if (opts.token) h.set("authorization", `Bearer ${opts.token}`);
  return h;
}

async function answer(res: Response): Promise<WidgetAnswer> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, body };
}

export async function widgetRoutes(): Promise<WidgetRoutes> {
  const tdb = await createTestDatabase();
  process.env.DATABASE_URL = tdb.url;
  const params = (shop = "acme") => ({ params: Promise.resolve({ shop }) });
  return {
    tdb,
    async start(o = {}) {
      const req = new Request(`${origin}/api/widget/${o.shop ?? "acme"}/conversation`, {
        method: "POST",
        headers: headersFor({ ip: o.ip, token: o.token }),
        body: "{}",
      });
      return answer(await conversationRoute.POST(req, params(o.shop)));
    },
    async send(token, body, o = {}) {
      const init: RequestInit & { duplex?: string } = {
        method: "POST",
        headers: headersFor({ ip: o.ip, token, headers: o.headers }),
        body: o.raw ? (body as BodyInit) : JSON.stringify(body),
      };
      if (body instanceof ReadableStream) init.duplex = "half";
      return answer(await messagesRoute.POST(new Request(`${origin}/api/widget/${o.shop ?? "acme"}/messages`, init), params(o.shop)));
    },
    async human(token, o = {}) {
      const req = new Request(`${origin}/api/widget/${o.shop ?? "acme"}/human`, {
        method: "POST",
        headers: headersFor({ ip: o.ip, token }),
      });
      return answer(await humanRoute.POST(req, params(o.shop)));
    },
    async view(token, o = {}) {
      const req = new Request(`${origin}/api/widget/${o.shop ?? "acme"}/conversation?after=0`, {
        headers: headersFor({ ip: o.ip, token }),
      });
      return answer(await conversationRoute.GET(req, params(o.shop)));
    },
    async events(token, o = {}) {
      const headers = headersFor({ ip: o.ip, token });
      headers.set("accept", "text/event-stream");
      if (o.cursor) headers.set("last-event-id", o.cursor);
      const req = new Request(`${origin}/api/widget/acme/events${o.query ? `?${o.query}` : ""}`, { headers, signal: o.signal });
      return eventsRoute.GET(req, params());
    },
    async close() {
      await disconnectPrisma();
      await tdb.drop();
    },
  };
}

/** Widget limits high enough never to get in the way; a test lowers the one it is about. */
export const RELAXED_WIDGET_LIMITS = {
  messagesPerMinutePerConversation: 1000,
  messagesPerMinutePerIp: 1000,
  messagesPerMinutePerShop: 100_000,
  conversationsPerHourPerIp: 1000,
};

/**
 * Publishes a new policy version for the "acme" shop: the demo rules with `change` laid over their `limits`, under the
 * next unused version number, and makes it the active one.
 */
export async function publishWidgetLimits(w: WidgetRoutes, change: Partial<PolicyRulesInput["limits"] & object>): Promise<void> {
  const db = w.tdb.prisma;
  const tenant = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  const latest = await db.policyVersion.aggregate({ where: { tenantId: tenant.id }, _max: { version: true } });
  const version = Math.max(tenant.policyVersion, latest._max.version ?? 0) + 1;
  const rules = structuredClone(DEMO_POLICY_RULES) as unknown as PolicyRulesInput;
  rules.limits = { ...(rules.limits as object), ...change } as PolicyRulesInput["limits"];
  await db.policyVersion.create({ data: { tenantId: tenant.id, version, rules: rules as object } });
  await db.tenant.update({ where: { id: tenant.id }, data: { policyVersion: version } });
}

export type Frame = { id?: string | null; event?: string; data: string };

/** Reads frames off a live stream until `enough` says so (or the time runs out: an error naming what came). */
export function frameReader(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  const frames: Frame[] = [];
  return {
    frames,
    async until(enough: (frames: Frame[]) => boolean, timeoutMs = 15_000): Promise<Frame[]> {
      const deadline = Date.now() + timeoutMs;
      while (!enough(frames)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`not enough frames within ${timeoutMs} ms: ${JSON.stringify(frames)}`);
        const next = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), left))]);
        if (next === null) continue;
        if (next.done) throw new Error(`the stream ended: ${JSON.stringify(frames)}`);
        frames.push(...(parser.push(decoder.decode(next.value, { stream: true })) as Frame[]));
      }
      return frames;
    },
  };
}

export const views = (frames: Frame[]) => frames.filter((f) => f.event === "view").map((f) => JSON.parse(f.data) as WidgetView);

/** A body of `bytes` bytes streamed in `chunk`-sized pieces with no declared length; `pulled()` says how much was read. */
export function chunkedBody(bytes: number, chunk = 1024) {
  let sent = 0;
  const piece = new TextEncoder().encode("x".repeat(chunk));
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      sent += piece.byteLength;
      controller.enqueue(piece);
    },
  });
  return { stream, pulled: () => sent };
}
