// What the readable reference (/docs/api) shows of the OpenAPI document: schemas as tables of fields, types in
// words, and a curl example per operation. Pure functions of the document, so the page and the document never drift.
import type { ApiOperation, OpenApiDocument } from "./openapi";

type JsonSchema = Record<string, unknown>;

/** One row of a schema's field table: `customer.email`, its type in words, whether it is always there. */
export interface FieldRow {
  name: string;
  type: string;
  /** The component a type refers to (for a link), if any. */
  ref?: string;
  required: boolean;
  description?: string;
}

const refName = (ref: string) => ref.split("/").pop()!;

/** A schema's type in words: `string`, `integer or null`, `"PENDING" | "APPROVED"`, `array of Handoff`. */
export function typeInWords(s: JsonSchema): { type: string; ref?: string } {
  if (typeof s.$ref === "string") return { type: refName(s.$ref), ref: refName(s.$ref) };
  if (Array.isArray(s.enum)) return { type: s.enum.map((v) => JSON.stringify(v)).join(" | ") };
  if (Array.isArray(s.anyOf)) {
    const parts = (s.anyOf as JsonSchema[]).map(typeInWords);
    return { type: parts.map((p) => p.type).join(" or "), ref: parts.find((p) => p.ref)?.ref };
  }
  const types = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === "string" ? [s.type] : [];
  if (types.includes("array")) {
    const item = typeInWords((s.items as JsonSchema | undefined) ?? {});
    return { type: `array of ${item.type}${types.includes("null") ? " or null" : ""}`, ref: item.ref };
  }
  if (types.length === 0) return { type: "any JSON" };
  const words = types.map((t) => (t === "string" && s.format ? `string (${s.format})` : t));
  return { type: words.join(" or ") };
}

/** The field rows of an object schema, nested objects flattened with dotted names (to `depth` levels). */
export function fieldRows(schema: JsonSchema, prefix = "", depth = 3): FieldRow[] {
  const object = nonNullBranch(schema);
  const properties = (object.properties as Record<string, JsonSchema> | undefined) ?? {};
  const required = new Set((object.required as string[] | undefined) ?? []);
  const rows: FieldRow[] = [];
  for (const [key, prop] of Object.entries(properties)) {
    const name = `${prefix}${key}`;
    const { type, ref } = typeInWords(prop);
    const inner = nonNullBranch(prop);
    const nested = inner.properties && depth > 1;
    const itemObject = !nested && (inner.items as JsonSchema | undefined)?.properties && depth > 1;
    rows.push({
      name,
      type: nested ? `object${isNullable(prop) ? " or null" : ""}` : itemObject ? `array of objects` : type,
      ...(ref ? { ref } : {}),
      required: required.has(key),
      ...(typeof prop.description === "string" ? { description: prop.description } : {}),
    });
    if (nested) rows.push(...fieldRows(inner, `${name}.`, depth - 1));
    if (itemObject) rows.push(...fieldRows(inner.items as JsonSchema, `${name}[].`, depth - 1));
  }
  return rows;
}

function isNullable(s: JsonSchema): boolean {
  return (
    (Array.isArray(s.anyOf) && (s.anyOf as JsonSchema[]).some((b) => b.type === "null")) ||
    (Array.isArray(s.type) && s.type.includes("null"))
  );
}

function nonNullBranch(s: JsonSchema): JsonSchema {
  if (Array.isArray(s.anyOf)) return (s.anyOf as JsonSchema[]).find((b) => b.type !== "null") ?? s;
  return s;
}

/** A curl command for an operation against `origin`, with path parameters as shell variables. */
export function curlExample(origin: string, path: string, method: string, op: ApiOperation): string {
  const shellPath = path.replace(/\{(\w+)\}/g, (_m, name: string) => `$${name.toUpperCase()}`);
  const query = op["x-example"]?.query ? `?${op["x-example"].query}` : "";
  const url = `${origin}/api/v1${shellPath}${query}`;
  const lines = [`curl -sS ${method === "get" ? "" : `-X ${method.toUpperCase()} `}"${url}"`];
  if (op.security.length) lines.push(`  -H "Authorization: Bearer $SUPPORT_API_TOKEN"`);
  const body = op.requestBody?.content["application/json"].example;
  if (body !== undefined) {
    lines.push(`  -H "Content-Type: application/json"`);
    lines.push(`  -d '${JSON.stringify(body)}'`);
  }
  return lines.join(" \\\n");
}

/** The operations of the document in its order, each with its path and method. */
export function operationsOf(doc: OpenApiDocument): Array<{ path: string; method: string; op: ApiOperation; anchor: string }> {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ path, method, op: op!, anchor: op!.operationId })),
  );
}
