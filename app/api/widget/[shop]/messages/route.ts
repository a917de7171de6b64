import { noteDatabaseFailure } from "@/lib/db/outage";
import { after } from "next/server";
import { z } from "zod";
import { getPrisma } from "@/lib/db/client";
import { log } from "@/lib/log";
import { customerTextSchema, receiveCustomerMessage } from "@/lib/conversations/intake";
import { getRuntime } from "@/lib/runtime/shared-runtime";
import { advanceConversationFrom, claimFor } from "@/lib/runtime/advance";
import { assertSameOrigin, bearerToken, widgetRoute, json, readJson, type ShopParams } from "@/lib/widget/http";
import { viewWithCursor, visitorSession } from "@/lib/widget/session";
import type { WidgetSendResponse } from "@/lib/widget/api-types";
import { clientKey } from "@/lib/identity/client-address";
import { limitMessage } from "@/lib/widget/limits";

const sendSchema = z.object({ text: customerTextSchema });

/**
 * The customer sends a message. The reply is not awaited: the run advances after the response is sent
 * (`after()`), and the widget follows it through live updates — the POST returns at once.
 */
export const POST = widgetRoute("send message", async (req: Request, ctx: ShopParams) => {
  assertSameOrigin(req);
  const db = await getPrisma();
  // Authenticate before reading the body, so a forged token is a 404 whatever it sends.
  const { tenant, conversation } = await visitorSession(db, (await ctx.params).shop, bearerToken(req));
  const client = clientKey(req.headers);
  // Counted before the body is read: a flood of anything costs one counter update per request and nothing else.
  await limitMessage(db, tenant, conversation.id, client);
  const { text } = await readJson(req, sendSchema);
  const deps = await getRuntime();
  // The lease is taken as the run is created: the in-process worker cannot pick the run up in between, and
  // if this process dies the lease expires and a worker does.
  const claim = claimFor(deps);
  const intake = await receiveCustomerMessage(db, {
    tenantId: tenant.id,
    conversationId: conversation.id,
    text,
    model: deps.model.model,
    claimFor: claim,
    // Identity checks the run makes are limited per client as well as per conversation: they read it there.
    clientIp: client,
  });
  if (intake.kind === "started") {
    const { runId, run } = intake;
    after(async () => {
      try {
        await advanceConversationFrom(deps, runId, { claimedAs: claim, run });
      } catch (err) {
        // The run keeps its state in the database; a worker (or the next message) picks it up again.
        if (!noteDatabaseFailure(err, "advance after message")) log.error({ err, runId }, "advancing the run after the response failed");
      }
    });
  }
  // The view from the customer's message on (the widget merges it by seq; what came before, it has or the live
  // stream brings): an answer whose size does not grow with the conversation.
  const { view } = await viewWithCursor(db, conversation.id, intake.seq - 1);
  return json({ kind: intake.kind, view } satisfies WidgetSendResponse, 202);
});
