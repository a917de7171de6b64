import { getPrisma } from "@/lib/db/client";
import { requestHuman } from "@/lib/conversations/request-human";
import { assertSameOrigin, bearerToken, widgetRoute, json, type ShopParams } from "@/lib/widget/http";
import { viewWithCursor, visitorSession } from "@/lib/widget/session";
import { limitMessage } from "@/lib/widget/limits";
import { clientKey } from "@/lib/identity/client-address";
import type { WidgetHumanResponse } from "@/lib/widget/api-types";

/** "Talk to a person": escalates at once in code (idempotent: one open escalation per conversation). */
export const POST = widgetRoute("talk to a person", async (req: Request, ctx: ShopParams) => {
  assertSameOrigin(req);
  const db = await getPrisma();
  const { tenant, conversation } = await visitorSession(db, (await ctx.params).shop, bearerToken(req));
  await limitMessage(db, tenant, conversation.id, clientKey(req.headers));
  const result = await requestHuman(db, { tenantId: tenant.id, conversationId: conversation.id });
  const { view } = await viewWithCursor(db, conversation.id);
  return json({ status: result.status, view } satisfies WidgetHumanResponse);
});
