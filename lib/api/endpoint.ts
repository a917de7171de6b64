// One endpoint of the JSON API = a spec (method, path, scope, zod schemas, words for the reference) + a handler.
// The spec is what the OpenAPI document is generated from (./openapi.ts); ./handler.ts serves it:
//
//   bearer token → tenant + scopes (UNAUTHENTICATED) → rate limit (RATE_LIMITED) → scope (FORBIDDEN)
//   → zod params, query, body (INVALID_INPUT) → handler → response encoded through its schema → JSON
import type { z } from "zod";
import type { PrismaClient } from "@/lib/db/prisma-types";
import type { AppErrorCode } from "@/lib/errors";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import type { ApiScope } from "./scopes";
import type { ApiCaller } from "./tokens";

type AnyObject = z.ZodObject<z.ZodRawShape>;

export interface EndpointSpec<
  S extends ApiScope | null = ApiScope | null,
  P extends AnyObject = AnyObject,
  Q extends AnyObject = AnyObject,
  B extends AnyObject = AnyObject,
  R extends z.ZodType = z.ZodType,
> {
  /** Names the operation in the document and in logs. */
  operationId: string;
  method: "GET" | "POST";
  /** Under /api/v1, OpenAPI style: `/handoffs/{id}` (the route file is app/api/v1/handoffs/[id]/route.ts). */
  path: string;
  summary: string;
  description: string;
  /** The scope a token needs; null: public (no token, no rate limit). */
  scope: S;
  params?: P;
  query?: Q;
  body?: B;
  response: R;
  /** The refusals this endpoint can answer besides the ones every authenticated endpoint can. */
  errors: AppErrorCode[];
  /** For the reference page's curl example. */
  example?: { query?: string; body?: z.input<B> };
}

/** What a handler gets besides its input: the caller (null on public endpoints), the database, the runtime. */
export interface ApiContext<C extends ApiCaller | null = ApiCaller> {
  caller: C;
  db: PrismaClient;
  runtime: () => Promise<RuntimeDeps>;
}

export type EndpointInput<P extends AnyObject, Q extends AnyObject, B extends AnyObject> = {
  params: z.output<P>;
  query: z.output<Q>;
  body: z.output<B>;
};

export interface ApiEndpoint<
  S extends ApiScope | null = ApiScope | null,
  P extends AnyObject = AnyObject,
  Q extends AnyObject = AnyObject,
  B extends AnyObject = AnyObject,
  R extends z.ZodType = z.ZodType,
> extends EndpointSpec<S, P, Q, B, R> {
  handle: (input: EndpointInput<P, Q, B>, ctx: ApiContext<S extends ApiScope ? ApiCaller : null>) => Promise<z.output<R>>;
}

export function defineEndpoint<
  S extends ApiScope | null,
  P extends AnyObject,
  Q extends AnyObject,
  B extends AnyObject,
  R extends z.ZodType,
>(spec: EndpointSpec<S, P, Q, B, R>, handle: ApiEndpoint<S, P, Q, B, R>["handle"]): ApiEndpoint<S, P, Q, B, R> {
  return { ...spec, handle };
}

/** Refusals every authenticated endpoint can answer, whatever it does. */
export const COMMON_ERRORS: AppErrorCode[] = ["UNAUTHENTICATED", "FORBIDDEN", "RATE_LIMITED", "INVALID_INPUT", "INTERNAL"];
