import { getPrisma } from "@/lib/db/client";
import { storeOf } from "@/lib/db/kysely";
import { readCustomerView } from "@/lib/conversations/view";
import { afterSchema } from "@/lib/widget/http";
import { eventsSince } from "@/lib/events";
import { AppError } from "@/lib/errors";
import { assertSameOrigin, bearerToken, widgetRoute, type ShopParams } from "@/lib/widget/http";
import { toWidgetView, visitorSession } from "@/lib/widget/session";
import { LAST_EVENT_ID_HEADER } from "@/lib/widget/api-types";
import { eventStreamHeaders, FALLBACK_POLL_MS, followEvents, followViews, parseCursor } from "@/lib/widget/event-stream";
import { limitRead } from "@/lib/widget/limits";
import { clientKey } from "@/lib/identity/client-address";
import { announcedUpTo, currentDraft, listenerGeneration, waitForFeed } from "@/lib/live/hub";

/**
 * Live updates for one conversation as Server-Sent Events. Each frame's `id:` is the event id; a client
 * reconnects with `Last-Event-ID` (or `?cursor=`) and gets everything after it, so a dropped connection
 * never loses an event. The stream ends after a while and the client reconnects from its cursor. While the agent
 * writes a reply, `draft` frames (no id: they are not part of the feed) carry what is safe to show so far.
 * With `?view=1&after=<seq>`, the stream carries the customer's view itself (lib/widget/event-stream `followViews`):
 * the view from `after` when it opens, then whenever it changed.
 */
export const GET = widgetRoute("live updates", async (req: Request, ctx: ShopParams) => {
  assertSameOrigin(req);
  const query = new URL(req.url).searchParams;
  const cursor = parseCursor(req.headers.get(LAST_EVENT_ID_HEADER) ?? query.get("cursor"));
  if (cursor === null) throw new AppError("INVALID_INPUT", "The event cursor is not valid.");
  const after = query.get("view") === "1" ? afterSchema.safeParse(query.get("after") ?? "0") : null;
  if (after && !after.success) throw new AppError("INVALID_INPUT", "after must be a message number.");
  const db = await getPrisma();
  await limitRead(clientKey(req.headers));
  const { tenant, conversation } = await visitorSession(db, (await ctx.params).shop, bearerToken(req));
  const scope = { tenantId: tenant.id, conversationId: conversation.id };
  // The listener's generation as each read began: a wait after a reconnect the read may have missed ends at once.
  let heard = listenerGeneration();
  const live = {
    signal: req.signal,
    wait: (timeoutMs: number, signal: AbortSignal) => waitForFeed(scope, { timeoutMs, fallbackMs: FALLBACK_POLL_MS, signal, since: heard }),
    draft: () => currentDraft(scope),
    announced: () => announcedUpTo(conversation.id),
  };
  const stream = after?.success
    ? followViews({
        ...live,
        after: after.data,
        read: async (afterSeq) => {
          heard = listenerGeneration();
          const { view, cursor } = await readCustomerView(storeOf(db), conversation.id, afterSeq);
          return { view: toWidgetView(view, cursor), cursor };
        },
      })
    : followEvents({
        ...live,
        cursor,
        fetch: (from) => {
          heard = listenerGeneration();
          return eventsSince(db, scope, from, 100);
        },
      });
  return new Response(stream, { headers: eventStreamHeaders });
});
