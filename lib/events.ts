// The event feed, for callers outside the runtime's steps (console claims, tests): the same rows and the same
// NOTIFY as the runtime's own events (lib/store/events).
import { storeOf } from "@/lib/db/kysely";
import { addEvent, eventsSince as readEventsSince, type FeedEvent, type NewEvent } from "@/lib/store/events";
import { Statement } from "@/lib/store/statement";

export type { FeedEvent };

/** Appends one event (its own statement). */
export async function publishEvent(client: object, e: NewEvent): Promise<void> {
  const s = Statement.plain();
  addEvent(s, "ev", e);
  await s.run(storeOf(client));
}

/** Events after a cursor (exclusive), oldest first; never past an event whose transaction commits late. */
export async function eventsSince(client: object, scope: { tenantId: string; conversationId?: string }, cursor: bigint, limit = 200) {
  return readEventsSince(storeOf(client), scope, cursor, limit);
}
