import "server-only";
import { unstable_rethrow } from "next/navigation";
import type { z } from "zod";
import { getPrisma } from "@/lib/db/client";
import { getSessionClaims } from "@/lib/auth/session";
import { createOperationFactory, type OperationContext, type OperationSpec } from "./core";
import { httpStatusFor } from "./result";

/**
 * Server actions and console route handlers, wired to the real session cookie and the shared database.
 *
 *   export const claimHandoffAction = staffAction({ name: "claimHandoff", input: handoffRef }, (input, ctx) =>
 *     claimHandoff(ctx.db, ctx, input.handoffId));
 */
export const staffAction = createOperationFactory({ getClaims: getSessionClaims, getDb: getPrisma, rethrow: unstable_rethrow });

type RouteContext = { params: Promise<Record<string, string | string[]>> };

/**
 * A console route handler over the same chain. Input = query string + route params (+ a JSON body for
 * non-GET requests); the answer is the ActionResult as JSON with a matching status (401, 403, 404, 409 …).
 */
export function staffRoute<S extends z.ZodType, T>(spec: OperationSpec<S>, handler: (input: z.output<S>, ctx: OperationContext) => Promise<T>) {
  const operation = staffAction(spec, handler);
  return async (req: Request, route?: RouteContext): Promise<Response> => {
    const raw: Record<string, unknown> = Object.fromEntries(new URL(req.url).searchParams);
    Object.assign(raw, (await route?.params) ?? {});
    if (req.method !== "GET" && req.method !== "HEAD" && req.headers.get("content-type")?.includes("application/json")) {
      const body = await req.json().catch(() => null);
      if (body && typeof body === "object" && !Array.isArray(body)) Object.assign(raw, body);
    }
    const result = await operation(raw);
    return Response.json(result, {
      status: result.ok ? 200 : httpStatusFor(result.error.code),
      // Console data is per person and changes every second: never cache it anywhere.
      headers: { "cache-control": "no-store" },
    });
  };
}
