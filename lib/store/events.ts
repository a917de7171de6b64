// The event feed live views follow (Event rows, written in the same statement as the change they announce), and
// the integrations' outbox (WebhookEvent rows, delivered after commit by lib/webhooks). A trigger on Event NOTIFYs
// `support_events` at commit, so listeners wake at once instead of polling.
import { sql } from "kysely";
import type { Store } from "@/lib/db/kysely";
import { json, type Sql, type Statement, type WriteOptions } from "./statement";

/** The largest event id there can be (the column is a PostgreSQL bigint): a cursor past it is malformed. */
export const MAX_EVENT_ID = 9_223_372_036_854_775_807n;

export interface NewEvent {
  tenantId: string;
  conversationId?: string | null | Sql;
  type: string;
  /** JSON data, or an SQL expression building it (jsonb_build_object over other CTEs). */
  data?: unknown;
}

function dataSql(data: unknown): Sql {
  return typeof data === "object" && data !== null && "toOperationNode" in data ? (data as Sql) : json(data ?? {});
}

/** Adds the INSERT of one feed event to a statement (conditional on `opts.from`/`where`, like any write). */
export function addEvent(s: Statement, name: string, e: NewEvent, opts: WriteOptions = {}): void {
  s.insert(name, "Event", { tenantId: e.tenantId, conversationId: e.conversationId ?? null, type: e.type, data: dataSql(e.data) }, opts);
}

/** Webhook event types an integrator can subscribe to. */
export const WEBHOOK_EVENT_TYPES = [
  "handoff.created",
  "handoff.decided",
  "escalation.created",
  "run.completed",
  "run.dead_lettered",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * Adds an outbox row for integrations (sent after commit with the event's id, so receivers can de-duplicate) — only
 * when an enabled endpoint of the shop subscribes to its type: a shop without webhooks writes nothing for them (an
 * outbox row per finished run, kept forever, for nobody), and one that adds an endpoint gets what happens from then on.
 */
export function addWebhookEvent(
  s: Statement,
  name: string,
  e: { tenantId: string; type: WebhookEventType; payload: unknown },
  opts: WriteOptions = {},
): void {
  const subscribed = sql<boolean>`EXISTS (SELECT 1 FROM "WebhookEndpoint" sub
    WHERE sub."tenantId" = ${e.tenantId} AND sub.enabled AND ${e.type}::text = ANY(sub."eventTypes"))`;
  s.insert(
    name,
    "WebhookEvent",
    { id: sql`gen_random_uuid()::text`, tenantId: e.tenantId, type: e.type, payload: dataSql(e.payload) },
    { ...opts, where: opts.where ? sql<boolean>`(${opts.where}) AND ${subscribed}` : subscribed },
  );
}

export interface FeedEvent {
  id: bigint;
  tenantId: string;
  conversationId: string | null;
  type: string;
  data: unknown;
  createdAt: Date;
}

/**
 * The feed's horizon: the oldest transaction still in flight (as of the statement's snapshot) that could write an
 * event here. Ids come from a sequence, so a transaction may commit a lower id after a higher one is visible; only
 * events written by transactions below the horizon are read, so a cursor never skips an event that commits late.
 * A transaction of another database on the same server (another app, another test's database) can never write one:
 * an in-flight xid that pg_stat_activity shows active in another database does not hold the horizon back. (Any
 * other — this database's, or one that finished since the snapshot — does; none in flight: the snapshot's xmax.)
 */
export const feedHorizon = sql`coalesce(
  (SELECT min(x) FROM pg_snapshot_xip(pg_current_snapshot()) x
    WHERE NOT EXISTS (
      SELECT 1 FROM pg_stat_activity a
      WHERE a.datname IS DISTINCT FROM current_database() AND a.backend_xid::text = (x::text::bigint % 4294967296)::text)),
  pg_snapshot_xmax(pg_current_snapshot()))`;

/** Events after a cursor (exclusive), oldest first, below the feed's horizon (see `feedHorizon`). */
export async function eventsSince(
  db: Store,
  scope: { tenantId: string; conversationId?: string },
  cursor: bigint,
  limit = 200,
): Promise<FeedEvent[]> {
  let q = db
    .selectFrom("Event")
    .select(["id", "tenantId", "conversationId", "type", "data", "createdAt"])
    .where("tenantId", "=", scope.tenantId)
    .where("id", ">", cursor)
    .where(sql<boolean>`txid < ${feedHorizon}`);
  if (scope.conversationId) q = q.where("conversationId", "=", scope.conversationId);
  return q.orderBy("id").limit(limit).execute();
}

/** The newest event of a shop below the feed's horizon (0 if none): where a live view starts following. */
export async function feedHead(db: Store, tenantId: string): Promise<bigint> {
  const row = await db
    .selectFrom("Event")
    .select((eb) => eb.fn.max("id").as("head"))
    .where("tenantId", "=", tenantId)
    .where(sql<boolean>`txid < ${feedHorizon}`)
    .executeTakeFirst();
  return row?.head ? BigInt(row.head) : 0n;
}

/** The newest event id of a conversation (0 if none): live updates continue after it. */
export async function latestEventId(db: Store, conversationId: string): Promise<bigint> {
  const row = await db
    .selectFrom("Event")
    .select("id")
    .where("conversationId", "=", conversationId)
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
  return row?.id ?? 0n;
}
