// Serves an endpoint of the JSON API as a route handler. No framework imports: tests call the handler with a Request
// and their own database and runtime (./serve.ts binds the process's own for app/api/v1).
import { z } from "zod";
import type { PrismaClient } from "@/lib/db/prisma-types";
import { poolOf } from "@/lib/db/sql";
import { AppError, toPublicError } from "@/lib/errors";
import { readJsonText } from "@/lib/http-body";
import { assertStorable } from "@/lib/storable-text";
import { addLogContext, log, requestIdFrom, withLogContext } from "@/lib/log";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import type { ApiContext, ApiEndpoint } from "./endpoint";
import { apiStatusFor } from "./errors";
import { apiRateLimiter, type RateLimitPolicy, type RateLimitState } from "./rate-limit";
import { type ApiCaller, verifyApiToken } from "./tokens";

export interface ApiDeps {
  getDb: () => Promise<PrismaClient>;
  getRuntime: () => Promise<RuntimeDeps>;
  rateLimit: () => RateLimitPolicy;
}

export type RouteContext = { params?: Promise<Record<string, string | string[] | undefined>> };

/** A route handler, carrying the endpoint it serves (the OpenAPI completeness test reads it). */
export type ApiRouteHandler = ((req: Request, ctx?: RouteContext) => Promise<Response>) & { endpoint: ApiEndpoint };

export function createApiHandler(endpoint: ApiEndpoint, deps: ApiDeps): ApiRouteHandler {
  const handler = (req: Request, ctx?: RouteContext) => {
    const requestId = requestIdFrom(req.headers);
    return withLogContext({ requestId, operation: `api.${endpoint.operationId}` }, async () => {
      const started = performance.now();
      const headers = new Headers({ "cache-control": "no-store", "x-content-type-options": "nosniff", "x-request-id": requestId });
      let status = 200;
      let body: unknown;
      try {
        body = await serve(endpoint, deps, req, ctx, headers);
      } catch (err) {
        ({ status, body } = refusal(err, headers));
      }
      // One line per request (a failure's cause is logged where it is caught); a token at its limit is worth a warning.
      log[status === 429 ? "warn" : "info"]({ status, ms: Math.round(performance.now() - started) }, "api request");
      return Response.json(body, { status, headers });
    });
  };
  return Object.assign(handler, { endpoint });
}

async function serve(endpoint: ApiEndpoint, deps: ApiDeps, req: Request, route: RouteContext | undefined, headers: Headers) {
  const db = await deps.getDb();
  let caller: ApiCaller | null = null;
  if (endpoint.scope !== null) {
    caller = await verifyApiToken(db, bearerToken(req));
    addLogContext({ tenantId: caller.tenantId });
    setRateLimitHeaders(headers, await limiterFor(db, deps).consume(caller.tokenId));
    if (!caller.scopes.includes(endpoint.scope)) {
      throw new AppError("FORBIDDEN", `This token lacks the scope ${endpoint.scope}.`, { requiredScope: endpoint.scope });
    }
  }
  // Nothing the database cannot store (a NUL, a lone surrogate) gets past here: a 400, not a failed query.
  const rawParams = (await route?.params) ?? {};
  assertStorable(rawParams, "path");
  const rawQuery = Object.fromEntries(new URL(req.url).searchParams);
  assertStorable(rawQuery, "query");
  const params = parse(endpoint.params, rawParams, "path");
  const query = parse(endpoint.query, rawQuery, "query");
  let body: Record<string, unknown> = {};
  if (endpoint.body) {
    const raw = await readJsonBody(req);
    assertStorable(raw, "body");
    body = parse(endpoint.body, raw, "body");
  }
  const ctx: ApiContext<ApiCaller | null> = { caller, db, runtime: deps.getRuntime };
  const result = await (endpoint.handle as (i: unknown, c: ApiContext<ApiCaller | null>) => Promise<unknown>)({ params, query, body }, ctx);
  // Encoded through the declared schema: dates become ISO strings and anything undeclared is dropped.
  return z.encode(endpoint.response, result as never);
}

function limiterFor(db: PrismaClient, deps: ApiDeps) {
  const pool = poolOf(db);
  if (!pool) throw new Error("the API's database client has no pg pool (create it with createPrisma)");
  return apiRateLimiter(pool, deps.rateLimit());
}

function setRateLimitHeaders(headers: Headers, s: RateLimitState) {
  headers.set("ratelimit-limit", String(s.limit));
  headers.set("ratelimit-remaining", String(s.remaining));
  headers.set("ratelimit-reset", String(s.resetSeconds));
}

function refusal(err: unknown, headers: Headers): { status: number; body: unknown } {
  if (!(err instanceof AppError)) log.error({ err }, "api request failed");
  const error = toPublicError(err);
  if (error.code === "RATE_LIMITED") {
    // The refusal carries the three RateLimit headers too, as every answer to a token does: the window ends when the
    // caller may try again.
    const retryAfter = String(error.details?.retryAfterSeconds ?? 60);
    headers.set("retry-after", retryAfter);
    if (error.details?.limit !== undefined) headers.set("ratelimit-limit", String(error.details.limit));
    headers.set("ratelimit-remaining", "0");
    headers.set("ratelimit-reset", retryAfter);
  }
  if (error.code === "UNAUTHENTICATED") headers.set("www-authenticate", 'Bearer realm="api", error="invalid_token"');
  return { status: apiStatusFor(error.code), body: { error } };
}

/** The token from `Authorization: Bearer …`; null when absent or not a bearer credential. Never logged. */
function bearerToken(req: Request): string | null {
  const m = req.headers.get("authorization")?.match(/^Bearer[ \t]+(\S{1,300})[ \t]*$/i);
  return m ? m[1]! : null;
}

function parse(schema: z.ZodType | undefined, raw: unknown, where: "path" | "query" | "body"): Record<string, unknown> {
  if (!schema) return {};
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data as Record<string, unknown>;
  const issues = parsed.error.issues.map((i) =>
    i.code === "unrecognized_keys"
      ? i.keys
          .map(
            (k) =>
              `${[where, ...i.path, k].join(".")}: ${where === "body" ? "not a field of this request" : "not a parameter of this endpoint"}`,
          )
          .join("; ")
      : `${[where, ...i.path].join(".")}: ${i.message}`,
  );
  throw new AppError("INVALID_INPUT", issues.join("; "));
}

async function readJsonBody(req: Request): Promise<unknown> {
  if (!/^application\/json\b/i.test(req.headers.get("content-type") ?? ""))
    throw new AppError("INVALID_INPUT", "Send the body as JSON (Content-Type: application/json).");
  // At most 32 kB is read, with or without a declared length (413 past it); lone surrogates are a 400.
  return readJsonText(req);
}
