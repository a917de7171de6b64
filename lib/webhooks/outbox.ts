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
import { FailuresOfAPass, processBackoff } from "@/lib/backoff";
import type { Store } from "@/lib/db/kysely";
import { connectivityFailureKind } from "@/lib/db/outage";
import { log } from "@/lib/log";

const FAN_OUT_LOCK = sql`hashtextextended('webhook-fan-out', 0)`;

/** Events whose fan-out failed for a reason of their own, waiting for their next try (lib/backoff). */
export const fanOutRetries = processBackoff("webhook-fan-out");

interface FanOut {
  events: number;
  deliveries: number;
}

/**
 * Queues deliveries for up to `limit` committed events not yet fanned out, in one statement. Returns the counts.
 * An event whose fan-out fails for a reason of its own (a row a bug or a later constraint left unwritable) fails
 * that statement: the events are then fanned out one by one, so every other one goes out, and the failing one is
 * logged and tried again later (an endpoint receives it after the events that went out meanwhile). A database that
 * cannot be reached fails it.
 */
export async function fanOutWebhookEvents(db: Store, limit = 500): Promise<FanOut> {
  const skip = fanOutRetries.waiting();
  try {
    return (await fanOut(db, { limit, skip })) ?? { events: 0, deliveries: 0 };
  } catch (err) {
    if (connectivityFailureKind(err)) throw err;
    return fanOutOneByOne(db, limit, skip);
  }
}

/** Each event on its own; the failures are logged one line per kind, naming their events. */
async function fanOutOneByOne(db: Store, limit: number, skip: readonly string[]): Promise<FanOut> {
  const done: FanOut = { events: 0, deliveries: 0 };
  const failures = new FailuresOfAPass("eventId", {
    one: "fanning out a webhook event failed; it is tried again later, the other events go out meanwhile",
    many: (n) => `fanning out ${n} webhook events failed alike; each is tried again later, the other events go out meanwhile`,
  });
  const { rows } = await sql<{ id: string; tenantId: string }>`
    SELECT id, "tenantId" FROM "WebhookEvent" WHERE "fannedOutAt" IS NULL ${notIn(skip)} ORDER BY seq LIMIT ${limit}`.execute(db);
  try {
    for (const event of rows) {
      try {
        const one = await fanOut(db, { limit: 1, skip: [], only: event.id });
        if (!one) break; // another worker is fanning out: the rest is its
        done.events += one.events;
        done.deliveries += one.deliveries;
      } catch (err) {
        if (connectivityFailureKind(err)) throw err;
        failures.add(err, { eventId: event.id, tenantId: event.tenantId, ...fanOutRetries.failed(event.id) });
      }
    }
  } finally {
    failures.log((fields, msg) => log.error(fields, msg));
  }
  return done;
}

/** The fan-out statement, under the fan-out lock: for the oldest events not fanned out, or for the one `only`. */
async function fanOut(db: Store, opts: { limit: number; skip: readonly string[]; only?: string }): Promise<FanOut | null> {
  // Events retried after a failure: those that go out now are no longer waiting for anything.
  const retried = fanOutRetries.failingKeys().filter((id) => !opts.skip.includes(id));
  const result = await db.transaction().execute(async (tx) => {
    const locked = await sql<{ ok: boolean }>`SELECT pg_try_advisory_xact_lock(${FAN_OUT_LOCK}) AS ok`.execute(tx);
    if (!locked.rows[0]?.ok) return null; // another worker is fanning out right now
    const { rows } = await sql<FanOut & { retried: string[] | null }>`
      WITH ev AS (
        SELECT id, "tenantId", type, "endpointId", seq FROM "WebhookEvent"
        WHERE "fannedOutAt" IS NULL ${opts.only === undefined ? sql`` : sql`AND id = ${opts.only}`} ${notIn(opts.skip)}
        ORDER BY seq LIMIT ${opts.limit} FOR UPDATE
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
        UPDATE "WebhookEvent" w SET "fannedOutAt" = now() FROM ev WHERE w.id = ev.id RETURNING w.id
      )
      SELECT (SELECT count(*)::int FROM done) AS events, (SELECT count(*)::int FROM queued) AS deliveries,
        ${retried.length ? sql`(SELECT array_agg(id) FROM done WHERE id = ANY(${retried}::text[]))` : sql`NULL::text[]`} AS retried`.execute(
      tx,
    );
    return rows[0] ?? { events: 0, deliveries: 0, retried: null };
  });
  if (!result) return null;
  for (const id of result.retried ?? []) fanOutRetries.settled(id);
  return { events: result.events, deliveries: result.deliveries };
}

const notIn = (ids: readonly string[]) => (ids.length ? sql`AND id <> ALL(${[...ids]}::text[])` : sql``);

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
