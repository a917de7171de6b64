import { createHash } from "node:crypto";

/**
 * A deterministic id such as `toolu_01…` or `msg_01…`: the same request always gets the same ids (so a
 * replayed request is answered identically), different requests or block positions get different ones.
 */
export function stableId(prefix: string, ...parts: unknown[]): string {
  const digest = createHash("sha256").update(JSON.stringify(parts)).digest("base64url").replace(/[-_]/g, "");
  return `${prefix}01${digest.slice(0, 22)}`;
}
