// Webhook endpoints in settings: where a shop's events go, which ones, and the log of every delivery attempt. Admins
// only, checked here against the database whatever page or action calls it; every query is the caller's shop. The
// signing secret is returned once, when the endpoint is added, and never read back; it never reaches the audit trail.
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { addAudit } from "@/lib/store/audit";
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from "@/lib/store/events";
import { Statement } from "@/lib/store/statement";
import { queueTestEvent } from "@/lib/webhooks/outbox";
import { refusedHost } from "@/lib/webhooks/target";
import { requireAdmin, type SettingsActor } from "./admin";

export const MAX_WEBHOOK_ENDPOINTS = 20;

export const WEBHOOK_EVENT_DESCRIPTIONS: Record<WebhookEventType, string> = {
  "handoff.created": "a call was parked for a person's approval",
  "handoff.decided": "a person (or the API) approved, denied or edited a parked call",
  "escalation.created": "a conversation was handed to a person",
  "run.completed": "the agent finished a run with its reply",
  "run.dead_lettered": "a run gave up after its retries (dead letter)",
};

export interface WebhookEndpointView {
  id: string;
  url: string;
  description: string;
  eventTypes: WebhookEventType[];
  enabled: boolean;
  createdAt: Date;
  /** deliveries waiting to be sent or retried */
  pending: number;
  failed: number;
  lastDelivery: { status: string; statusCode: number | null; at: Date } | null;
}

/** A signing secret in the Standard Webhooks format: whsec_ + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/** An absolute http(s) URL without credentials; anything else is INVALID_INPUT naming the field. */
export function parseEndpointUrl(raw: unknown): string {
  const text = typeof raw === "string" ? raw.trim() : "";
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AppError("INVALID_INPUT", "Enter the endpoint's full URL, e.g. https://example.com/webhooks.", { field: "url" });
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new AppError("INVALID_INPUT", "The endpoint's URL must start with https:// (or http://).", { field: "url" });
  if (url.username || url.password)
    throw new AppError("INVALID_INPUT", "Put no user name or password in the URL: deliveries are signed instead.", { field: "url" });
  if (text.length > 2000) throw new AppError("INVALID_INPUT", "The URL is too long (2,000 characters at most).", { field: "url" });
  // A name is checked again on every delivery, on the address it resolves to then (lib/webhooks/target).
  if (refusedHost(url))
    throw new AppError("INVALID_INPUT", "Deliveries go to public addresses only, not to this machine or a private network.", {
      field: "url",
    });
  return url.toString();
}

function parseEventTypes(raw: unknown): WebhookEventType[] {
  const list = Array.isArray(raw) ? raw : [];
  const known = list.filter((t): t is WebhookEventType => (WEBHOOK_EVENT_TYPES as readonly unknown[]).includes(t));
  if (known.length !== list.length || known.length === 0)
    throw new AppError("INVALID_INPUT", `Choose at least one event: ${WEBHOOK_EVENT_TYPES.join(", ")}.`, { field: "eventTypes" });
  return WEBHOOK_EVENT_TYPES.filter((t) => known.includes(t));
}

/** The shop's endpoints, oldest first, with how their deliveries stand. */
export async function listWebhookEndpoints(client: object, actor: SettingsActor): Promise<WebhookEndpointView[]> {
  const db = storeOf(client);
  await requireAdmin(db, actor);
  const { rows } = await sql<
    Omit<WebhookEndpointView, "lastDelivery"> & { lastStatus: string | null; lastCode: number | null; lastAt: Date | null }
  >`
    SELECT e.id, e.url, e.description, e."eventTypes", e.enabled, e."createdAt",
      (SELECT count(*)::int FROM "WebhookDelivery" d WHERE d."endpointId" = e.id AND d.status = 'pending') AS pending,
      (SELECT count(*)::int FROM "WebhookDelivery" d WHERE d."endpointId" = e.id AND d.status = 'failed') AS failed,
      last.status AS "lastStatus", last."lastStatusCode" AS "lastCode", last."updatedAt" AS "lastAt"
    FROM "WebhookEndpoint" e
    LEFT JOIN LATERAL (
      SELECT d.status::text, d."lastStatusCode", coalesce(d."deliveredAt", a."createdAt") AS "updatedAt"
      FROM "WebhookDelivery" d LEFT JOIN LATERAL (SELECT max("createdAt") AS "createdAt" FROM "WebhookAttempt" WHERE "deliveryId" = d.id) a ON true
      WHERE d."endpointId" = e.id AND d.attempts > 0 ORDER BY d.id DESC LIMIT 1
    ) last ON true
    WHERE e."tenantId" = ${actor.tenantId}
    ORDER BY e."createdAt", e.id`.execute(db);
  return rows.map(({ lastStatus, lastCode, lastAt, ...r }) => ({
    ...r,
    eventTypes: r.eventTypes.filter((t): t is WebhookEventType => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(t)),
    lastDelivery: lastStatus && lastAt ? { status: lastStatus, statusCode: lastCode, at: lastAt } : null,
  }));
}

/** Adds an endpoint (audited, without its secret). Returns the secret: the only time it is shown. */
export async function createWebhookEndpoint(
  client: object,
  actor: SettingsActor,
  input: { url: unknown; description?: unknown; eventTypes: unknown },
): Promise<{ endpoint: WebhookEndpointView; secret: string }> {
  const db = storeOf(client);
  const admin = await requireAdmin(db, actor);
  const url = parseEndpointUrl(input.url);
  const eventTypes = parseEventTypes(input.eventTypes);
  const description = typeof input.description === "string" ? input.description.trim().slice(0, 200) : "";
  const secret = newWebhookSecret();
  const id = `whe_${randomBytes(12).toString("hex")}`;
  const s = Statement.plain();
  s.select("existing", sql`SELECT count(*)::int AS n FROM "WebhookEndpoint" WHERE "tenantId" = ${actor.tenantId}`);
  s.insert(
    "ep",
    "WebhookEndpoint",
    { id, tenantId: actor.tenantId, url, description, secret, eventTypes: sql`${eventTypes}::text[]`, createdById: admin.id },
    { from: ["existing"], where: sql<boolean>`existing.n < ${MAX_WEBHOOK_ENDPOINTS}`, returning: sql`id` },
  );
  addAudit(
    s,
    "audit",
    { tenantId: actor.tenantId, actor: admin.email, action: "webhook_endpoint.created", subject: id, data: { url, eventTypes } },
    { from: ["ep"] },
  );
  const row = await s.run<{ id: string | null }>(db, sql`(SELECT id FROM ep) AS id`);
  if (!row?.id) throw new AppError("INVALID_INPUT", `A shop has at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints.`);
  const endpoint = (await listWebhookEndpoints(client, actor)).find((e) => e.id === id);
  if (!endpoint) throw new AppError("NOT_FOUND", "The endpoint was removed meanwhile.");
  return { endpoint, secret };
}

/** Turns an endpoint's deliveries on or off (audited). Off: no new events are queued for it; queued ones wait. */
export async function setWebhookEndpointEnabled(client: object, actor: SettingsActor, endpointId: string, enabled: boolean): Promise<void> {
  const db = storeOf(client);
  const admin = await requireAdmin(db, actor);
  const s = Statement.plain();
  s.update("ep", "WebhookEndpoint", { enabled }, sql<boolean>`id = ${endpointId} AND "tenantId" = ${actor.tenantId}`, {
    returning: sql`id, url`,
  });
  addAudit(
    s,
    "audit",
    {
      tenantId: actor.tenantId,
      actor: admin.email,
      action: enabled ? "webhook_endpoint.enabled" : "webhook_endpoint.disabled",
      subject: endpointId,
      data: sql`jsonb_build_object('url', ep.url)`,
    },
    { from: ["ep"] },
  );
  const row = await s.run<{ id: string | null }>(db, sql`(SELECT id FROM ep) AS id`);
  if (!row?.id) throw new AppError("NOT_FOUND", "This webhook endpoint was not found.");
}

/** Deletes an endpoint with its delivery log (audited). Another shop's id is NOT_FOUND. */
export async function deleteWebhookEndpoint(client: object, actor: SettingsActor, endpointId: string): Promise<void> {
  const db = storeOf(client);
  const admin = await requireAdmin(db, actor);
  const s = Statement.plain();
  s.delete("ep", "WebhookEndpoint", sql<boolean>`id = ${endpointId} AND "tenantId" = ${actor.tenantId}`, { returning: sql`id, url` });
  addAudit(
    s,
    "audit",
    {
      tenantId: actor.tenantId,
      actor: admin.email,
      action: "webhook_endpoint.deleted",
      subject: endpointId,
      data: sql`jsonb_build_object('url', ep.url)`,
    },
    { from: ["ep"] },
  );
  const row = await s.run<{ id: string | null }>(db, sql`(SELECT id FROM ep) AS id`);
  if (!row?.id) throw new AppError("NOT_FOUND", "This webhook endpoint was not found.");
}

/** Queues a `webhook.test` event for one endpoint; the worker sends it like any other. Returns the event id. */
export async function sendTestWebhook(client: object, actor: SettingsActor, endpointId: string): Promise<{ eventId: string }> {
  const db = storeOf(client);
  const admin = await requireAdmin(db, actor);
  const ep = await db
    .selectFrom("WebhookEndpoint")
    .select(["id", "tenantId", "enabled"])
    .where("id", "=", endpointId)
    .where("tenantId", "=", actor.tenantId)
    .executeTakeFirst();
  if (!ep) throw new AppError("NOT_FOUND", "This webhook endpoint was not found.");
  if (!ep.enabled) throw new AppError("CONFLICT", "Enable the endpoint first: a disabled endpoint receives nothing.");
  return { eventId: await queueTestEvent(db, ep, admin.email) };
}

export interface DeliveryLogEntry {
  id: string;
  eventId: string;
  eventType: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  nextAttemptAt: Date | null;
  createdAt: Date;
  deliveredAt: Date | null;
  attemptLog: Array<{
    attempt: number;
    statusCode: number | null;
    durationMs: number;
    error: string | null;
    nextRetryAt: Date | null;
    at: Date;
  }>;
}

/** An endpoint's deliveries, newest first, each with every attempt. */
export async function webhookDeliveryLog(
  client: object,
  actor: SettingsActor,
  endpointId: string,
  limit = 50,
): Promise<{ endpoint: WebhookEndpointView; deliveries: DeliveryLogEntry[] }> {
  const endpoint = (await listWebhookEndpoints(client, actor)).find((e) => e.id === endpointId);
  if (!endpoint) throw new AppError("NOT_FOUND", "This webhook endpoint was not found.");
  const db = storeOf(client);
  const { rows } = await sql<Omit<DeliveryLogEntry, "nextAttemptAt"> & { nextAttemptAt: Date }>`
    SELECT d.id::text, d."eventId", d."eventType", d.status::text, d.attempts, d."nextAttemptAt", d."createdAt", d."deliveredAt",
      coalesce((SELECT jsonb_agg(jsonb_build_object('attempt', a.attempt, 'statusCode', a."statusCode", 'durationMs', a."durationMs",
                 'error', a.error, 'nextRetryAt', a."nextRetryAt", 'at', a."createdAt") ORDER BY a.attempt)
                FROM "WebhookAttempt" a WHERE a."deliveryId" = d.id), '[]') AS "attemptLog"
    FROM "WebhookDelivery" d
    WHERE d."endpointId" = ${endpointId} AND d."tenantId" = ${actor.tenantId}
    ORDER BY d.id DESC LIMIT ${Math.min(Math.max(1, limit), 200)}`.execute(db);
  return {
    endpoint,
    deliveries: rows.map((r) => ({
      ...r,
      nextAttemptAt: r.status === "pending" ? r.nextAttemptAt : null,
      attemptLog: r.attemptLog.map((a) => ({
        ...a,
        nextRetryAt: a.nextRetryAt ? new Date(`${a.nextRetryAt}Z`) : null,
        at: new Date(`${a.at}Z`),
      })),
    })),
  };
}
