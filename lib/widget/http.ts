import "server-only";
import { z } from "zod";
import { noteDatabaseFailure } from "@/lib/db/outage";
import { AppError, toPublicError, type AppErrorCode } from "@/lib/errors";
import { readJsonText } from "@/lib/http-body";
import { log, requestIdFrom, withLogContext } from "@/lib/log";

/** `?after=<seq>`: a message number — the view holds only the messages after it. */
export const afterSchema = z.coerce.number().int().min(0).max(1_000_000_000);

/**
 * Plumbing shared by the widget's route handlers: JSON responses that never cache, errors mapped to a
 * status and a user-safe body, bounded JSON bodies validated with zod, and the visitor's bearer token.
 * The token is a credential: it is read from a header, never from the URL, and never logged.
 */

/**
 * A widget route handler: runs `handler` with a request id (the caller's `x-request-id` if sane, else a new one)
 * in the log context and on the response, and turns anything thrown into `errorResponse`.
 */
export function widgetRoute<C>(name: string, handler: (req: Request, ctx: C) => Promise<Response>) {
  return (req: Request, ctx: C): Promise<Response> => {
    const requestId = requestIdFrom(req.headers);
    return withLogContext({ requestId, operation: name }, async () => {
      let response: Response;
      try {
        response = await handler(req, ctx);
      } catch (err) {
        response = errorResponse(err, name);
      }
      response.headers.set("x-request-id", requestId);
      return response;
    });
  };
}

const STATUS: Partial<Record<AppErrorCode, number>> = {
  INVALID_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONVERSATION_OWNED: 409,
  CONFLICT: 409,
  ALREADY_DECIDED: 409,
  STALE_VERSION: 409,
  CLAIMED_BY_OTHER: 409,
  EXPIRED: 410,
  TOO_LARGE: 413,
  RATE_LIMITED: 429,
};

const UNAVAILABLE_MESSAGE = "The chat is briefly unavailable. Please try again in a moment.";

const NO_STORE = { "content-type": "application/json", "cache-control": "no-store", "x-content-type-options": "nosniff" };

/**
 * Answers shorter than this go out as they are. Next's server gzips every answer of a route handler: its compression
 * has a 1 kB threshold, but Next drops a route's Content-Length, so the threshold never applies and each answer of a
 * few hundred bytes costs a zlib stream to save a few bytes, or none. In `npm run load` (3 Dec) zlib took 1.5–1.8 s
 * of each web process's 63 s CPU profile, and 0.45–0.64 s once short answers went out as they are. `no-transform` is
 * the one header that compression honours per answer.
 */
export const COMPRESS_FROM_CHARS = 1024;

export function json(body: unknown, status = 200): Response {
  const text = JSON.stringify(body);
  const headers = text.length < COMPRESS_FROM_CHARS ? { ...NO_STORE, "cache-control": "no-store, no-transform" } : NO_STORE;
  return new Response(text, { status, headers });
}

export function errorResponse(err: unknown, route: string): Response {
  // While the database is down every request fails alike: counted and logged once per outage, answered 503.
  if (noteDatabaseFailure(err, route)) return json({ code: "UNAVAILABLE", message: UNAVAILABLE_MESSAGE }, 503);
  if (!(err instanceof AppError)) {
    // Log what went wrong (never the request's credentials); show only the generic message.
    log.error({ err, route }, "widget request failed");
  }
  const body = toPublicError(err);
  const status = err instanceof AppError ? (STATUS[err.code] ?? 422) : 500;
  const response = json({ code: body.code, message: body.message }, status);
  if (body.code === "RATE_LIMITED") response.headers.set("retry-after", String(body.details?.retryAfterSeconds ?? 60));
  return response;
}

/** The visitor's conversation token from `Authorization: Bearer …`, or null. */
export function bearerToken(req: Request): string | null {
  const header = req.headers.get("authorization");
  const m = header?.match(/^Bearer\s+([A-Za-z0-9_-]{1,200})\s*$/);
  return m ? m[1]! : null;
}

/**
 * These routes serve only the widget iframe, which is same-origin with them. Browsers label every request
 * with Sec-Fetch-Site; anything a browser sends from another site is refused (no CORS is offered either).
 * JSON bodies are required, which also forces a CORS preflight on any cross-origin attempt.
 */
export function assertSameOrigin(req: Request): void {
  const site = req.headers.get("sec-fetch-site");
  if (site && site !== "same-origin" && site !== "none") throw new AppError("FORBIDDEN", "This request is not allowed from another site.");
}

/**
 * Reads a bounded JSON body (lib/http-body.ts: at most 32 kB read, declared or not → else 413) and validates it;
 * every other failure is a 400 with a plain explanation.
 */
export async function readJson<S extends z.ZodType>(req: Request, schema: S): Promise<z.output<S>> {
  const type = req.headers.get("content-type") ?? "";
  if (!/^application\/json\b/i.test(type))
    throw new AppError("INVALID_INPUT", "Send the request as JSON (Content-Type: application/json).");
  const data = await readJsonText(req);
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` (${issue.path.join(".")})` : "";
    throw new AppError("INVALID_INPUT", `${issue?.message ?? "The request is not valid."}${where}`);
  }
  return parsed.data;
}

export type ShopParams = { params: Promise<{ shop: string }> };
