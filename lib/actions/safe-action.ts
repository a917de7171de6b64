import "server-only";
import { headers } from "next/headers";
import { unstable_rethrow } from "next/navigation";
import type { z } from "zod";
import { getPrisma } from "@/lib/db/client";
import { getSessionClaims } from "@/lib/auth/session";
import { requestIdFrom, withLogContext } from "@/lib/log";
import { createOperationFactory, type OperationContext, type OperationSpec } from "./core";
import { httpStatusFor } from "@/lib/errors";
import { AppError } from "@/lib/errors";
import { readJsonText } from "@/lib/http-body";
import { assertStorable } from "@/lib/storable-text";

/**
 * Server actions and console route handlers, wired to the real session cookie and the shared database.
 *
 *   export const claimHandoffAction = staffAction({ name: "claimHandoff", input: handoffRef }, (input, ctx) =>
 *     claimHandoff(ctx.db, ctx, input.handoffId));
 */
export const staffAction = createOperationFactory({
  getClaims: getSessionClaims,
  getDb: getPrisma,
  rethrow: unstable_rethrow,
  requestHeaders: () => headers(),
});

type RouteContext = { params: Promise<Record<string, string | string[]>> };

/**
 * A console route handler over the same chain. Input = query string + route params (+ a JSON body for
 * non-GET requests); the answer is the ActionResult as JSON with a matching status (401, 403, 404, 409 …).
 */
export function staffRoute<S extends z.ZodType, T>(
  spec: OperationSpec<S>,
  handler: (input: z.output<S>, ctx: OperationContext) => Promise<T>,
) {
  const operation = staffAction(spec, handler);
  return async (req: Request, route?: RouteContext): Promise<Response> => {
    const requestId = requestIdFrom(req.headers);
    return withLogContext({ requestId }, () => answer(req, requestId, route));
  };
  async function answer(req: Request, requestId: string, route?: RouteContext): Promise<Response> {
    const raw: Record<string, unknown> = Object.fromEntries(new URL(req.url).searchParams);
    Object.assign(raw, (await route?.params) ?? {});
    if (req.method !== "GET" && req.method !== "HEAD" && req.headers.get("content-type")?.includes("application/json")) {
      // Bounded (32 kB, declared or not) and valid Unicode, read before the session is checked: refused as it comes.
      let body: unknown;
      try {
        body = await readJsonText(req);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        return Response.json(
          { ok: false, error: err.toJSON() },
          { status: httpStatusFor(err.code), headers: { "cache-control": "no-store", "x-request-id": requestId } },
        );
      }
      if (body && typeof body === "object" && !Array.isArray(body)) Object.assign(raw, body);
    }
    let result: Awaited<ReturnType<typeof operation>>;
    try {
      // Nothing the database cannot store (a NUL, a lone surrogate) reaches an operation.
      assertStorable(raw, "request");
      result = await operation(raw);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      result = { ok: false, error: err.toJSON() };
    }
    return Response.json(result, {
      status: result.ok ? 200 : httpStatusFor(result.error.code),
      // Console data is per person and changes every second: never cache it anywhere.
      headers: { "cache-control": "no-store", "x-request-id": requestId },
    });
  }
}
