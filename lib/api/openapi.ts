// The OpenAPI 3.1 document of /api/v1, generated from the endpoints' own zod schemas (zod's JSON Schema output is
// draft 2020-12, which OpenAPI 3.1 uses as is). Served at /api/v1/openapi.json and rendered at /docs/api.
import { z } from "zod";
import type { AppErrorCode } from "@/lib/errors";
import { COMMON_ERRORS, type ApiEndpoint } from "./endpoint";
import { API_ERROR_CODES, apiStatusFor } from "./errors";
import { API_SCOPE_DESCRIPTIONS, API_SCOPES } from "./scopes";
import { API_COMPONENTS } from "./schemas";

type JsonSchema = Record<string, unknown>;
const COMPONENT_REF = (id: string) => `#/components/schemas/${id}`;

export interface ApiParameter {
  name: string;
  in: "path" | "query";
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

export interface ApiOperation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
  security: Array<Record<string, string[]>>;
  "x-required-scope"?: string;
  parameters: ApiParameter[];
  requestBody?: { required: true; content: { "application/json": { schema: JsonSchema; example?: unknown } } };
  responses: Record<string, { description: string; headers?: Record<string, unknown>; content?: Record<string, { schema: JsonSchema }> }>;
  "x-error-codes": AppErrorCode[];
  "x-example"?: { query?: string; body?: unknown };
}

export interface OpenApiDocument {
  openapi: "3.1.0";
  info: { title: string; version: string; description: string };
  servers: Array<{ url: string; description: string }>;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Partial<Record<"get" | "post", ApiOperation>>>;
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, JsonSchema> };
  "x-error-codes": Array<{ code: AppErrorCode; status: number; meaning: string }>;
  "x-scopes": Array<{ scope: string; description: string }>;
}

// Dates carry `format: date-time`; the regular expression zod adds for it helps no reader.
const jsonSchemaOptions = {
  io: "input" as const,
  target: "draft-2020-12" as const,
  override: (ctx: { jsonSchema: JsonSchema }) => {
    if (ctx.jsonSchema.format === "date-time") delete ctx.jsonSchema.pattern;
  },
};

function componentId(schema: z.ZodType): string | undefined {
  return z.globalRegistry.get(schema)?.id as string | undefined;
}

function withoutHeader(s: JsonSchema): JsonSchema {
  const { $schema: _s, $id: _i, ...rest } = s;
  return rest;
}

/** A schema where the document uses it: a $ref to its component when it has one, else inline. */
function schemaRef(schema: z.ZodType): JsonSchema {
  const id = componentId(schema);
  return id ? { $ref: COMPONENT_REF(id) } : withoutHeader(z.toJSONSchema(schema, jsonSchemaOptions) as JsonSchema);
}

function componentSchemas(): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const s of API_COMPONENTS) registry.add(s, { id: componentId(s)! });
  const { schemas } = z.toJSONSchema(registry, { ...jsonSchemaOptions, uri: COMPONENT_REF });
  if ("__shared" in schemas) throw new Error("a named API schema is missing from API_COMPONENTS (lib/api/schemas.ts)");
  return Object.fromEntries(Object.entries(schemas).map(([id, s]) => [id, withoutHeader(s as JsonSchema)]));
}

function parametersOf(schema: z.ZodType | undefined, where: "path" | "query"): ApiParameter[] {
  if (!schema) return [];
  const json = z.toJSONSchema(schema, jsonSchemaOptions) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, prop]) => {
    const { description, ...rest } = prop;
    return {
      name,
      in: where,
      required: where === "path" || (json.required ?? []).includes(name),
      ...(typeof description === "string" ? { description } : {}),
      schema: rest,
    };
  });
}

function errorResponses(codes: AppErrorCode[]): ApiOperation["responses"] {
  const byStatus = new Map<number, AppErrorCode[]>();
  for (const code of new Set(codes)) byStatus.set(apiStatusFor(code), [...(byStatus.get(apiStatusFor(code)) ?? []), code]);
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, cs]) => [
        String(status),
        {
          description: cs.map((c) => `\`${c}\`: ${API_ERROR_CODES[c]}`).join("; "),
          ...(status === 429
            ? { headers: { "Retry-After": { description: "seconds to wait", schema: { type: "integer", minimum: 1 } } } }
            : {}),
          content: { "application/json": { schema: { $ref: COMPONENT_REF("Error") } } },
        },
      ]),
  );
}

/** The endpoint's error codes as the document lists them: the common ones of authenticated endpoints, then its own. */
export function errorCodesOf(endpoint: ApiEndpoint): AppErrorCode[] {
  const common = endpoint.scope === null ? ["INTERNAL" as const] : COMMON_ERRORS;
  // A body is read at most 32 kB far: any endpoint that takes one can answer 413.
  return [...new Set([...common, ...endpoint.errors, ...(endpoint.body ? ["TOO_LARGE" as const] : [])])];
}

function operationOf(endpoint: ApiEndpoint): ApiOperation {
  const codes = errorCodesOf(endpoint);
  return {
    operationId: endpoint.operationId,
    summary: endpoint.summary,
    description: endpoint.description,
    tags: [endpoint.path.split("/")[1]!.replace(/\..*$/, "")],
    security: endpoint.scope === null ? [] : [{ bearerToken: [] }],
    ...(endpoint.scope ? { "x-required-scope": endpoint.scope } : {}),
    parameters: [...parametersOf(endpoint.params, "path"), ...parametersOf(endpoint.query, "query")],
    ...(endpoint.body
      ? {
          requestBody: {
            required: true as const,
            content: {
              "application/json": {
                schema: schemaRef(endpoint.body),
                ...(endpoint.example?.body ? { example: endpoint.example.body } : {}),
              },
            },
          },
        }
      : {}),
    responses: {
      "200": { description: "OK", content: { "application/json": { schema: schemaRef(endpoint.response) } } },
      ...errorResponses(codes),
    },
    "x-error-codes": codes,
    ...(endpoint.example ? { "x-example": endpoint.example } : {}),
  };
}

/** The document for these endpoints. */
export function buildOpenApiDocument(endpoints: readonly ApiEndpoint[]): OpenApiDocument {
  const paths: OpenApiDocument["paths"] = {};
  for (const e of endpoints) {
    const method = e.method.toLowerCase() as "get" | "post";
    paths[e.path] ??= {};
    if (paths[e.path]![method]) throw new Error(`two endpoints for ${e.method} ${e.path}`);
    paths[e.path]![method] = operationOf(e);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Support agent — JSON API",
      version: "1.0.0",
      description:
        'For integrators of one shop: read handoffs, runs and conversations, and decide approvals exactly as the console does. Authenticate with a bearer token scoped to one shop (`Authorization: Bearer sa_live_…`); an admin creates it in the console (Settings → API tokens) or the operator with `npm run --silent agent -- token create --tenant <shop> --name <name>`. Every error is `{ "error": { "code", "message" } }` with a stable code. Requests are limited per token (`429` with `Retry-After`).',
    },
    servers: [{ url: "/api/v1", description: "this server" }],
    tags: [
      { name: "handoffs", description: "approvals and escalations" },
      { name: "runs", description: "runs and their transcripts" },
      { name: "conversations", description: "widget conversations" },
      { name: "openapi", description: "this document" },
    ],
    paths,
    components: {
      securitySchemes: {
        bearerToken: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "sa_live_…",
          description: `A token of one shop, with scopes: ${API_SCOPES.join(", ")}.`,
        },
      },
      schemas: componentSchemas(),
    },
    "x-error-codes": (Object.keys(API_ERROR_CODES) as AppErrorCode[]).map((code) => ({
      code,
      status: apiStatusFor(code),
      meaning: API_ERROR_CODES[code],
    })),
    "x-scopes": API_SCOPES.map((scope) => ({ scope, description: API_SCOPE_DESCRIPTIONS[scope] })),
  };
}
