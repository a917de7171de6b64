import { createHash } from "node:crypto";

/** JSON with object keys sorted at every level, so equal inputs have equal text whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/**
 * The idempotency key of a side-effecting call, derived from the operation itself: tenant, run, tool_use id
 * and canonical input. A retry, a second worker or a replayed approval of the same call gets the same key;
 * a reviewer's edit (different input) gets its own.
 */
export function idempotencyKey(parts: { tenantId: string; runId: string; toolUseId: string; toolName: string; input: unknown }): string {
  return createHash("sha256")
    .update([parts.tenantId, parts.runId, parts.toolUseId, parts.toolName, canonicalJson(parts.input)].join("\u0000"))
    .digest("hex")
    .slice(0, 40);
}
