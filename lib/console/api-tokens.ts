// The console's API tokens: admins of a shop list, create and revoke their shop's tokens. The role is checked here,
// in the data layer, whatever page or action calls it; the shop is the caller's, in every query.
import type { PrismaClient } from "@/lib/db/prisma-types";
import { issueApiToken, listApiTokens, revokeApiToken } from "@/lib/api/tokens";
import { assertAdmin } from "./access";

/** An admin of the shop: who they are and where they work. */
export interface AdminCaller {
  tenantId: string;
  staffId: string;
  email: string;
  role: "reviewer" | "supervisor" | "admin";
}

export async function shopApiTokens(db: PrismaClient, caller: AdminCaller) {
  assertAdmin(caller);
  return listApiTokens(db, caller.tenantId);
}

/** Returns the token itself: the page shows it once and never again. */
export async function createShopApiToken(db: PrismaClient, caller: AdminCaller, input: { name: string; scopes: string[] }) {
  assertAdmin(caller);
  return issueApiToken(db, {
    tenantId: caller.tenantId,
    name: input.name,
    scopes: input.scopes,
    issuedBy: { staffId: caller.staffId, email: caller.email },
  });
}

/** Another shop's token id is NOT_FOUND. */
export async function revokeShopApiToken(db: PrismaClient, caller: AdminCaller, tokenId: string) {
  assertAdmin(caller);
  return revokeApiToken(db, { id: tokenId, tenantId: caller.tenantId, revokedBy: { staffId: caller.staffId, email: caller.email } });
}
