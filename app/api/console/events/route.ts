import { z } from "zod";
import { staffRoute } from "@/lib/actions/safe-action";
import { consoleEvents, eventHead } from "@/lib/console/queries";

export const dynamic = "force-dynamic";

/**
 * GET /api/console/events?cursor=<id>[&conversationId=<id>] — the shop's events after a cursor. Live views
 * poll it and refetch what an event touches; after a reconnect they ask from the last cursor they saw, so
 * nothing is missed. Without a cursor: no events, only the current head to start from.
 */
export const GET = staffRoute(
  {
    name: "consoleEvents",
    input: z.object({ cursor: z.string().regex(/^\d{1,19}$/, "cursor must be an event id").optional(), conversationId: z.string().min(1).max(64).optional() }),
  },
  async ({ cursor, conversationId }, ctx) =>
    cursor === undefined ? { cursor: await eventHead(ctx.db, ctx.tenantId), more: false, events: [] } : consoleEvents(ctx.db, ctx.tenantId, BigInt(cursor), conversationId),
);
