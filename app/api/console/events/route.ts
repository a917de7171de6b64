import { z } from "zod";
import { staffRoute } from "@/lib/actions/safe-action";
import { consoleEventsAfter, eventHead } from "@/lib/console/queries";
import { FEED_TOPICS } from "@/lib/live/feed-topics";
import { MAX_EVENT_ID } from "@/lib/store/events";

export const dynamic = "force-dynamic";

/**
 * GET /api/console/events?cursor=<id>[&conversationId=<id>|&topic=queue][&wait=<ms>] — the shop's events after a
 * cursor. With `wait`, a long poll: answered as soon as something is written for the shop (the process's one listener
 * hears it from the database), or when the wait is over. `topic=queue`: only the events that can change the handoff
 * queue (lib/live/feed-topics) — an open queue is not answered for every customer message. Live views refetch what an
 * event touches; after a reconnect they ask from the last cursor they saw, so nothing is missed. Without a cursor:
 * only the current head to start from.
 */
export const GET = staffRoute(
  {
    name: "consoleEvents",
    input: z.object({
      cursor: z
        .string()
        .regex(/^\d{1,19}$/, "cursor must be an event id")
        .refine((c) => BigInt(c) <= MAX_EVENT_ID, "cursor must be an event id")
        .optional(),
      conversationId: z.string().min(1).max(64).optional(),
      /** hold the request up to this long (ms) while there is nothing new: a long poll */
      wait: z.coerce.number().int().min(0).max(25_000).optional(),
      /** the draft the caller shows (its n): a different one answers the long poll (the reply being written) */
      draft: z.coerce.number().int().min(-1).optional(),
      /** only the events a view follows (a conversation's are all its own) */
      topic: z.enum(FEED_TOPICS).optional(),
    }),
  },
  async ({ cursor, conversationId, wait, draft, topic }, ctx) =>
    cursor === undefined
      ? { cursor: await eventHead(ctx.db, ctx.tenantId), more: false, events: [], draft: null }
      : consoleEventsAfter(ctx.db, ctx.tenantId, BigInt(cursor), { conversationId, waitMs: wait ?? 0, draftSeen: draft, topic }),
);
