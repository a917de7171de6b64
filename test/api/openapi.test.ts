import { readdirSync } from "node:fs";
import path from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { API_ENDPOINTS, apiDocument } from "@/lib/api/endpoints";
import type { ApiRouteHandler } from "@/lib/api/handler";
import { API_ERROR_CODES } from "@/lib/api/errors";
import { apiStatusFor } from "@/lib/api/errors";
import { decisionRequestSchema } from "@/lib/api/schemas";
import { curlExample, fieldRows, operationsOf } from "@/lib/api/reference";
import { decisionSchema } from "@/lib/runtime/resume";

// The document and the route files must agree: every route under app/api/v1 is documented, with the method it
// exports, and every documented operation is served by a route file. The document is valid OpenAPI 3.1.
const root = path.resolve(__dirname, "../..");
const apiDir = path.join(root, "app/api/v1");
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] as const;

function routeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? routeFiles(path.join(dir, e.name)) : e.name === "route.ts" ? [path.join(dir, e.name)] : [],
  );
}

/** app/api/v1/handoffs/[id]/decision/route.ts → /handoffs/{id}/decision */
function documentPathOf(file: string): string {
  const rel = path.relative(apiDir, path.dirname(file)).split(path.sep).join("/");
  return `/${rel.replace(/\[(\w+)\]/g, "{$1}")}`;
}

async function servedOperations(): Promise<Array<{ file: string; path: string; method: string; handler: ApiRouteHandler }>> {
  const out = [];
  for (const file of routeFiles(apiDir)) {
    const mod = (await import(file)) as Record<string, unknown>;
    for (const method of METHODS) {
      if (mod[method]) out.push({ file, path: documentPathOf(file), method, handler: mod[method] as ApiRouteHandler });
    }
  }
  return out;
}

describe("the OpenAPI document", () => {
  it("lists every route file under app/api/v1 with its method, and nothing else", { timeout: 60_000 }, async () => {
    const doc = apiDocument();
    const served = await servedOperations();
    expect(served.length).toBeGreaterThan(0);
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    expect(served.map((s) => `${s.method} ${s.path}`).sort()).toEqual(documented.sort());
    for (const s of served) {
      // The file serves the endpoint the document describes at that path (not another one mounted by mistake).
      expect(s.handler.endpoint, `${s.file} must export serveEndpoint(…)`).toBeDefined();
      expect({ path: s.handler.endpoint.path, method: s.handler.endpoint.method }).toEqual({ path: s.path, method: s.method });
      expect(API_ENDPOINTS).toContain(s.handler.endpoint);
    }
  });

  it("is valid OpenAPI 3.1, and every $ref resolves", async () => {
    const doc = apiDocument();
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(10);
    for (const ref of new Set(refs)) {
      expect(ref).toMatch(/^#\/components\/schemas\/\w+$/);
      expect(doc.components.schemas[ref.split("/").pop()!], ref).toBeDefined();
    }
  });

  it("is generated from the schemas that validate requests", () => {
    const doc = apiDocument();
    const decision = doc.paths["/handoffs/{id}/decision"]!.post!;
    expect(decision.requestBody?.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/DecisionRequest" });
    const body = doc.components.schemas.DecisionRequest as { properties: Record<string, { enum?: string[] }>; required: string[] };
    // The console's decision schema: the same decisions, with the version required and the acting person named.
    expect(body.properties.decision?.enum).toEqual(decisionSchema.shape.decision.options);
    expect(body.required.sort()).toEqual(["actor", "decision", "version"]);
    expect(decisionRequestSchema.safeParse({ decision: "approve", version: 1, actor: "raj@acme.test" }).success).toBe(true);
    expect(decision["x-required-scope"]).toBe("handoffs:decide");
    expect(decision.security).toEqual([{ bearerToken: [] }]);
    expect(doc.paths["/openapi.json"]!.get!.security).toEqual([]);
    const list = doc.paths["/handoffs"]!.get!;
    expect(list.parameters.map((p) => p.name)).toEqual(["status", "kind", "since", "until", "limit", "cursor"]);
    expect(doc.paths["/runs/{id}"]!.get!.parameters).toEqual([
      expect.objectContaining({ name: "id", in: "path", required: true, schema: expect.objectContaining({ type: "string" }) }),
    ]);
  });

  it("documents every error code with its status, and each endpoint's refusals under those statuses", () => {
    const doc = apiDocument();
    expect(doc["x-error-codes"].map((e) => e.code).sort()).toEqual(Object.keys(API_ERROR_CODES).sort());
    const errorEnum = (doc.components.schemas.Error as { properties: { error: { properties: { code: { enum: string[] } } } } }).properties
      .error.properties.code.enum;
    expect(errorEnum.sort()).toEqual(Object.keys(API_ERROR_CODES).sort());
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const op of Object.values(ops)) {
        for (const code of op!["x-error-codes"]) {
          const response = op!.responses[String(apiStatusFor(code))];
          expect(response?.description, `${p}: ${code}`).toContain(`\`${code}\``);
        }
      }
    }
    expect(doc.paths["/handoffs/{id}/decision"]!.post!["x-error-codes"]).toEqual(
      expect.arrayContaining(["STALE_VERSION", "ALREADY_DECIDED", "OVER_AUTHORITY", "NOT_FOUND", "RATE_LIMITED", "UNAUTHENTICATED"]),
    );
    // Every operation that takes a body can answer 413 (a body is read at most 32 kB far); the others cannot.
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const op of Object.values(ops)) {
        const takesBody = "requestBody" in op!;
        expect(op!["x-error-codes"].includes("TOO_LARGE"), `${p}`).toBe(takesBody);
        expect("413" in op!.responses, `${p}`).toBe(takesBody);
      }
    }
  });

  it("names a component schema for every named zod schema (none inlined under another name)", () => {
    const named = Object.keys(apiDocument().components.schemas);
    expect(named).toEqual(expect.arrayContaining(["Error", "Handoff", "HandoffList", "DecisionRequest", "DecisionResult", "RunDetail"]));
    expect(named).not.toContain("__shared");
    expect(z.globalRegistry.get(decisionRequestSchema)?.id).toBe("DecisionRequest");
  });
});

describe("the reference page's view of the document", () => {
  it("flattens schemas into fields with their types, and gives each operation a curl example", () => {
    const doc = apiDocument();
    const handoff = fieldRows(doc.components.schemas.Handoff!);
    expect(handoff).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "version", type: "integer", required: true }),
        expect.objectContaining({ name: "status", type: expect.stringContaining('"PENDING" | "APPROVED"') }),
        expect.objectContaining({ name: "customer", type: "object or null" }),
        expect.objectContaining({ name: "customer.email", type: "string" }),
        expect.objectContaining({ name: "expiresAt", type: "string (date-time) or null" }),
      ]),
    );
    const list = fieldRows(doc.components.schemas.HandoffList!);
    expect(list[0]).toMatchObject({ name: "data", type: "array of Handoff", ref: "Handoff" });
    const ops = operationsOf(doc);
    expect(ops.map((o) => `${o.method} ${o.path}`)).toEqual(
      Object.entries(doc.paths).flatMap(([p, m]) => Object.keys(m).map((x) => `${x} ${p}`)),
    );
    const decide = ops.find((o) => o.op.operationId === "decideHandoff")!;
    expect(curlExample("https://support.example.com", decide.path, decide.method, decide.op)).toBe(
      [
        'curl -sS -X POST "https://support.example.com/api/v1/handoffs/$ID/decision"',
        '  -H "Authorization: Bearer $SUPPORT_API_TOKEN"',
        '  -H "Content-Type: application/json"',
        `  -d '{"decision":"approve","version":1,"actor":"raj@acme.test"}'`,
      ].join(" \\\n"),
    );
    const openapi = ops.find((o) => o.path === "/openapi.json")!;
    expect(curlExample("http://x", openapi.path, openapi.method, openapi.op)).not.toContain("Authorization");
  });
});
