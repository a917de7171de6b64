import { z } from "zod";

/**
 * What a JSON API token may do. Each endpoint of /api/v1 names the one scope it needs; a token without it is
 * refused with FORBIDDEN. Plain data (no server imports): the console's token form lists these too.
 */
export const API_SCOPES = ["handoffs:read", "handoffs:decide", "runs:read", "conversations:read"] as const;
export type ApiScope = (typeof API_SCOPES)[number];

export const apiScopeSchema = z.enum(API_SCOPES);

export const API_SCOPE_DESCRIPTIONS: Record<ApiScope, string> = {
  "handoffs:read": "list and read handoffs (approvals and escalations)",
  "handoffs:decide": "approve, deny or edit an approval on behalf of a staff member of the shop",
  "runs:read": "read a run with its transcript as the model saw it",
  "conversations:read": "list conversations",
};

/** Parses a comma-separated list (`handoffs:read,runs:read`); every scope when empty. Unknown names are refused. */
export function parseScopeList(raw: string | undefined): ApiScope[] | { unknown: string[] } {
  if (!raw?.trim()) return [...API_SCOPES];
  const names = [
    ...new Set(
      raw
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  const unknown = names.filter((n) => !apiScopeSchema.safeParse(n).success);
  return unknown.length ? { unknown } : (names as ApiScope[]);
}
