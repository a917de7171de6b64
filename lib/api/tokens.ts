// JSON API tokens: issued once (the caller sees the token a single time), stored as a SHA-256, scoped to one shop,
// revocable, with the time they were last used.
//
//   issueApiToken(db, { tenantId, name, scopes, issuedBy })  → { token, apiToken }   (the only time `token` exists)
//   verifyApiToken(db, token)                                 → the caller, or UNAUTHENTICATED
//   revokeApiToken(db, { id, tenantId?, revokedBy })          → the token as listed
//   listApiTokens(db, tenantId)
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { PrismaClient, PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { staffNames } from "@/lib/staff-names";
import { API_SCOPES, type ApiScope, apiScopeSchema } from "./scopes";

const TOKEN_PREFIX = "sa_live_";
/** Characters kept in clear (and indexed): `sa_live_` and the first 8 random characters. */
const SHOWN_LENGTH = TOKEN_PREFIX.length + 8;
/** The shape of every token we issue (and the demo seed accepts): anything else is refused before any query. */
const TOKEN_SHAPE = /^sa_live_[A-Za-z0-9_-]{20,200}$/;
/** lastUsedAt is a hint for people ("used 3 minutes ago"), not a log: one write a minute per token at most. */
const LAST_USED_RESOLUTION_MS = 60_000;

export const apiTokenNameSchema = z.string().trim().min(1, "Give the token a name.").max(80, "Keep the name under 80 characters.");
export const apiScopesSchema = z
  .array(apiScopeSchema)
  .min(1, "Choose at least one scope.")
  .transform((s) => [...new Set(s)]);

/** Who issued or revoked a token: a staff member (console), or the operator CLI. */
export type TokenActor = { staffId: string; email: string } | { operator: true };

/** The caller behind a valid token. */
export interface ApiCaller {
  tokenId: string;
  tokenName: string;
  tenantId: string;
  tenantSlug: string;
  scopes: ApiScope[];
}

const hashOf = (token: string) => createHash("sha256").update(token, "utf8").digest("hex");
const shownPart = (token: string) => token.slice(0, SHOWN_LENGTH);

type TokenRow = {
  id: string;
  tenantId: string;
  name: string;
  prefix: string;
  scopes: string[];
  createdAt: Date;
  createdById: string | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
};

/** A token as lists show it: never the token, never its hash. */
export function presentApiToken(row: TokenRow, staffNames: Map<string, string> = new Map()) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes.filter((s): s is ApiScope => (API_SCOPES as readonly string[]).includes(s)),
    createdAt: row.createdAt,
    createdBy: row.createdById ? { id: row.createdById, name: staffNames.get(row.createdById) ?? null } : null,
    lastUsedAt: row.lastUsedAt,
    revokedAt: row.revokedAt,
  };
}
export type PresentedApiToken = ReturnType<typeof presentApiToken>;

const actorName = (a: TokenActor) => ("operator" in a ? "operator" : a.email);

/**
 * Issues a token for one shop. Returns the token itself — the only time it exists outside the caller's hands: the
 * database keeps its SHA-256 and the first characters (to recognise it in a list). Audited.
 */
export async function issueApiToken(
  db: PrismaClient,
  input: { tenantId: string; name: unknown; scopes: unknown; issuedBy: TokenActor },
): Promise<{ token: string; apiToken: PresentedApiToken }> {
  const name = apiTokenNameSchema.safeParse(input.name);
  if (!name.success) throw new AppError("INVALID_INPUT", name.error.issues[0]!.message);
  const scopes = apiScopesSchema.safeParse(input.scopes);
  if (!scopes.success) throw new AppError("INVALID_INPUT", `Unknown or missing scopes. Scopes: ${API_SCOPES.join(", ")}.`);
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString("base64url")}`;
  const row = await db.$transaction(async (tx) => {
    const created = await storeToken(tx, {
      tenantId: input.tenantId,
      name: name.data,
      scopes: scopes.data,
      token,
      createdById: "staffId" in input.issuedBy ? input.issuedBy.staffId : null,
    });
    await tx.auditEvent.create({
      data: {
        tenantId: input.tenantId,
        actor: actorName(input.issuedBy),
        action: "api_token.issued",
        subject: created.id,
        data: { name: created.name, prefix: created.prefix, scopes: created.scopes },
      },
    });
    return created;
  });
  return { token, apiToken: presentApiToken(row, await staffNames(db, input.tenantId)) };
}

/** Stores a token the caller already holds (issueApiToken, the demo seed's ACME_API_TOKEN): hashed, never in clear. */
export function storeToken(
  tx: PrismaTx,
  t: { tenantId: string; name: string; scopes: readonly ApiScope[]; token: string; createdById?: string | null },
) {
  if (!TOKEN_SHAPE.test(t.token)) throw new AppError("INVALID_INPUT", "An API token must be `sa_live_` and at least 20 more characters.");
  return tx.apiToken.create({
    data: {
      tenantId: t.tenantId,
      name: t.name,
      prefix: shownPart(t.token),
      tokenHash: hashOf(t.token),
      scopes: [...t.scopes],
      createdById: t.createdById ?? null,
    },
  });
}

/**
 * The caller behind `Authorization: Bearer <token>`. A malformed, unknown or revoked token is UNAUTHENTICATED, all
 * with the same message (nothing tells a guesser which it was). The row is found by its shown prefix and the
 * hashes are compared in constant time; lastUsedAt moves at most once a minute.
 */
export async function verifyApiToken(db: PrismaTx, token: string | null, now = new Date()): Promise<ApiCaller> {
  const refused = new AppError("UNAUTHENTICATED", "Send a valid API token: Authorization: Bearer sa_live_…");
  if (!token || !TOKEN_SHAPE.test(token)) throw refused;
  const presented = Buffer.from(hashOf(token), "hex");
  const candidates = await db.apiToken.findMany({
    where: { prefix: shownPart(token) },
    include: { tenant: { select: { slug: true } } },
    take: 10,
  });
  // Every candidate is compared (no early exit), so the time taken says nothing about which bytes matched.
  let match: (typeof candidates)[number] | undefined;
  for (const c of candidates) {
    const stored = Buffer.from(c.tokenHash, "hex");
    if (stored.length === presented.length && timingSafeEqual(stored, presented)) match = c;
  }
  if (!match || match.revokedAt) throw refused;
  if (!match.lastUsedAt || now.getTime() - match.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
    // Conditional, so concurrent requests of one token write once per minute between them, not once each.
    await db.apiToken.updateMany({
      where: { id: match.id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now.getTime() - LAST_USED_RESOLUTION_MS) } }] },
      data: { lastUsedAt: now },
    });
  }
  return {
    tokenId: match.id,
    tokenName: match.name,
    tenantId: match.tenantId,
    tenantSlug: match.tenant.slug,
    scopes: match.scopes.filter((s): s is ApiScope => (API_SCOPES as readonly string[]).includes(s)),
  };
}

/**
 * Revokes a token at once: the next request with it is UNAUTHENTICATED. With `tenantId` (the console) another
 * shop's token is NOT_FOUND; the operator CLI revokes by id alone. Revoking a revoked token changes nothing.
 */
export async function revokeApiToken(
  db: PrismaClient,
  input: { id: string; tenantId?: string; revokedBy: TokenActor },
): Promise<PresentedApiToken> {
  const row = await db.$transaction(async (tx) => {
    const found = await tx.apiToken.findFirst({ where: { id: input.id, ...(input.tenantId ? { tenantId: input.tenantId } : {}) } });
    if (!found) throw new AppError("NOT_FOUND", "This API token was not found.");
    if (found.revokedAt) return found;
    const revoked = await tx.apiToken.update({ where: { id: found.id }, data: { revokedAt: new Date() } });
    await tx.auditEvent.create({
      data: {
        tenantId: found.tenantId,
        actor: actorName(input.revokedBy),
        action: "api_token.revoked",
        subject: found.id,
        data: { name: found.name, prefix: found.prefix },
      },
    });
    return revoked;
  });
  return presentApiToken(row, await staffNames(db, row.tenantId));
}

/** A shop's tokens, newest first, revoked ones included (they say when). */
export async function listApiTokens(db: PrismaTx, tenantId: string): Promise<PresentedApiToken[]> {
  const rows = await db.apiToken.findMany({ where: { tenantId }, orderBy: [{ createdAt: "desc" }, { id: "desc" }] });
  const names = await staffNames(db, tenantId);
  return rows.map((r) => presentApiToken(r, names));
}
