import { z } from "zod";
import { getPrisma } from "@/lib/db/client";
import { AppError } from "@/lib/errors";
import { afterSchema, assertSameOrigin, bearerToken, widgetRoute, json, readJson, type ShopParams } from "@/lib/widget/http";
import { startOrResumeConversation, visitorView, widgetTenant } from "@/lib/widget/session";
import { limitNewConversation, limitRead } from "@/lib/widget/limits";
import { clientKey } from "@/lib/identity/client-address";
import type { WidgetSession, WidgetViewResponse } from "@/lib/widget/api-types";

const startSchema = z.object({
  // The shop-signed identity JWT, handed to the iframe over the postMessage bridge.
  identity: z.string({ error: "identity must be a string." }).max(4096, "identity is too long.").nullish(),
});

/** Starts a conversation, or resumes the one whose token the visitor presents (if it is theirs). */
export const POST = widgetRoute("start conversation", async (req: Request, ctx: ShopParams) => {
  assertSameOrigin(req);
  const body = await readJson(req, startSchema);
  const db = await getPrisma();
  const tenant = await widgetTenant(db, (await ctx.params).shop);
  const session: WidgetSession = await startOrResumeConversation(db, {
    tenant,
    token: bearerToken(req),
    identity: body.identity ?? null,
    beforeOpen: () => limitNewConversation(db, tenant, clientKey(req.headers)),
  });
  return json(session);
});

/** The conversation as the customer sees it, only messages after `?after=<seq>`. */
export const GET = widgetRoute("conversation view", async (req: Request, ctx: ShopParams) => {
  assertSameOrigin(req);
  const after = afterSchema.safeParse(new URL(req.url).searchParams.get("after") ?? "0");
  if (!after.success) throw new AppError("INVALID_INPUT", "after must be a message number.");
  const db = await getPrisma();
  await limitRead(clientKey(req.headers));
  const view = await visitorView(db, (await ctx.params).shop, bearerToken(req), after.data);
  return json({ view } satisfies WidgetViewResponse);
});
