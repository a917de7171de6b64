// From the outbox to the delivery queue. Every fact an enabled endpoint of the shop subscribes to is written as a
// WebhookEvent row in the SAME statement as the fact itself (lib/store/events `addWebhookEvent`): no commit, no event;
// no event without its commit. After commit the worker fans each event out into one WebhookDelivery per subscribed
// endpoint of its shop — at most one per (endpoint, event), whatever crashes or repeats — and lib/webhooks/deliver
// sends them.
//
// Ordering: fan-outs run one at a time (a global advisory lock) and only see committed events, so delivery ids grow
// in the order events became visible; each endpoint receives its deliveries in id order.
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Store } from "@/lib/db/kysely";

const FAN_OUT_LOCK = sql`hashtextextended('webhook-fan-out', 0)`;

/** Queues deliveries for up to `limit` committed events not yet fanned out. Returns the counts. */
export async function fanOutWebhookEvents(db: Store, limit = 500): Promise<{ events: number; deliveries: number }> {
  return db.transaction().execute(async (tx) => {
    const locked = await sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${FAN_OUT_LOCK}) AS ok`.execute(tx);
    if (!locked.rows[0]?.ok) return { events: 0, deliveries: 0 }; // another worker is fanning out right now
    const { rows } = await sql<{ events: number; deliveries: number }>`
      WITH ev AS (
        SELECT id, "tenantId", type, "endpointId", seq FROM "WebhookEvent"
        WHERE "fannedOutAt" IS NULL ORDER BY seq LIMIT ${limit} FOR UPDATE
      ), queued AS (
        INSERT INTO "WebhookDelivery" ("tenantId", "endpointId", "eventId", "eventType")
        SELECT ev."tenantId", e.id, ev.id, ev.type FROM ev
        JOIN "WebhookEndpoint" e ON e."tenantId" = ev."tenantId" AND e.enabled
          AND CASE WHEN ev."endpointId" IS NOT NULL THEN e.id = ev."endpointId" ELSE ev.type = ANY(e."eventTypes") END
        ORDER BY ev.seq, e.id
        -- An endpoint being deleted right now: wait for that, and leave it out if it is gone (its delivery's foreign
        -- key would otherwise fail the whole pass).
        FOR KEY SHARE OF e
        ON CONFLICT ("endpointId", "eventId") DO NOTHING
        RETURNING 1
      ), done AS (
        UPDATE "WebhookEvent" w SET "fannedOutAt" = now() FROM ev WHERE w.id = ev.id RETURNING 1
      )
      SELECT (SELECT count(*)::int FROM done) AS events, (SELECT count(*)::int FROM queued) AS deliveries`.execute(tx);
    return rows[0] ?? { events: 0, deliveries: 0 };
  });
}

/** A test event for one endpoint (Settings → Webhooks → Send test event), sent like any other. Returns its id. */
export async function queueTestEvent(db: Store, endpoint: { id: string; tenantId: string }, sentBy: string): Promise<string> {
  const id = randomUUID();
  await db
    .insertInto("WebhookEvent")
    .values({
      id,
      tenantId: endpoint.tenantId,
      type: "webhook.test",
      endpointId: endpoint.id,
      payload: JSON.stringify({ endpointId: endpoint.id, sentBy, message: "A test event from Settings → Webhooks." }),
    })
    .execute();
  return id;
}
