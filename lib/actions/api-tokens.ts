"use server";
// Server actions of Settings → API tokens: admins only (the chain refuses other roles, and so does the data layer).
import { z } from "zod";
import { apiScopeSchema } from "@/lib/api/scopes";
import { createShopApiToken, revokeShopApiToken, shopApiTokens } from "@/lib/console/api-tokens";
import { staffAction } from "./safe-action";

const ADMINS = ["admin"] as const;

/** Creates a token; the answer carries it this once, with the shop's tokens as they are now. */
export const createApiTokenAction = staffAction(
  {
    name: "createApiToken",
    input: z.object({ name: z.string().max(200), scopes: z.array(apiScopeSchema).max(10) }),
    roles: ADMINS,
  },
  async (input, ctx) => {
    const created = await createShopApiToken(ctx.db, ctx, input);
    return { token: created.token, created: created.apiToken, tokens: await shopApiTokens(ctx.db, ctx) };
  },
);

export const revokeApiTokenAction = staffAction(
  { name: "revokeApiToken", input: z.object({ tokenId: z.string().trim().min(1).max(64) }), roles: ADMINS },
  async ({ tokenId }, ctx) => {
    await revokeShopApiToken(ctx.db, ctx, tokenId);
    return { tokens: await shopApiTokens(ctx.db, ctx) };
  },
);
