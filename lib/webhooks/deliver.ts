// Sending queued deliveries, signed with the Standard Webhooks scheme (`standardwebhooks`): headers webhook-id (the
// event's id — the same on every retry, so a receiver de-duplicates on it), webhook-timestamp and webhook-signature.
//
// One worker at a time delivers to an endpoint: it claims the endpoint with a lease (FOR UPDATE SKIP LOCKED, then a
// conditional update), sends the endpoint's oldest pending delivery, and records the attempt only while it still
// holds the lease. A later delivery waits while an earlier one is retrying, so an endpoint sees its events in order.
// A crash between sending and recording leaves the lease to expire; the next worker sends the SAME delivery again —
// same event id — so a receiver that de-duplicates sees it once. Failures retry with exponential backoff (with a
// little jitter) until `maxAttempts`, then the delivery is marked failed and the next one goes.
import { randomUUID } from "node:crypto";
import http from "node:http";
import https from "node:https";
import { sql } from "kysely";
import { Webhook } from "standardwebhooks";
import { doublingDelayMs } from "@/lib/backoff";
import type { Store } from "@/lib/db/kysely";
import { noteDatabaseFailure } from "@/lib/db/outage";
import { log } from "@/lib/log";
import { PrivateTargetError, publicOnlyLookup, refusedHost } from "./target";

export interface DeliveryOptions {
  /** who is delivering (leases name it) */
  workerId: string;
  /** how long a claim on an endpoint lasts without being renewed */
  leaseMs?: number;
  /** how long to wait for an endpoint's answer */
  timeoutMs?: number;
  /** the first retry's delay; each further one doubles it, up to maxDelayMs */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** attempts before a delivery is given up as failed */
  maxAttempts?: number;
  /** endpoints served at the same time */
  maxEndpoints?: number;
  /** deliveries sent to one endpoint per claim, at most */
  perClaim?: number;
  /** Test hook: runs after an endpoint answered and before the attempt is recorded (throwing = crashing there). */
  afterSend?: (d: { deliveryId: bigint; eventId: string; endpointId: string }) => void | Promise<void>;
}

export const DELIVERY_DEFAULTS = {
  leaseMs: 60_000,
  timeoutMs: 10_000,
  baseDelayMs: 10_000,
  maxDelayMs: 6 * 60 * 60_000,
  maxAttempts: 12,
  maxEndpoints: 8,
  perClaim: 50,
} as const;

/** Delay before retry number `attempt` (1 = after the first failure): base·2^(attempt-1), capped, plus up to 10%. */
export function retryDelayMs(attempt: number, baseDelayMs: number, maxDelayMs: number, random = Math.random): number {
  const plain = doublingDelayMs(attempt, baseDelayMs, maxDelayMs);
  return Math.round(plain * (1 + 0.1 * random()));
}

/** The body every endpoint receives: the Standard Webhooks envelope. */
export function webhookBody(e: { type: string; createdAt: string; payload: unknown }): string {
  return JSON.stringify({ type: e.type, timestamp: e.createdAt, data: e.payload });
}

/** The signed headers for one send of an event (the timestamp is the send's own; the id is the event's). */
export function signedHeaders(secret: string, eventId: string, body: string, at = new Date()): Record<string, string> {
  const timestamp = new Date(Math.floor(at.getTime() / 1000) * 1000);
  return {
    "content-type": "application/json",
    "user-agent": "support-agent-webhooks/1",
    "webhook-id": eventId,
    "webhook-timestamp": String(timestamp.getTime() / 1000),
    "webhook-signature": new Webhook(secret).sign(eventId, timestamp, body),
  };
}

interface ClaimedEndpoint {
  id: string;
  tenantId: string;
  url: string;
  secret: string;
}

interface HeadDelivery {
  id: bigint;
  eventId: string;
  eventType: string;
  attempts: number;
  due: boolean;
  payload: unknown;
  createdAt: string;
}

export interface SendResult {
  statusCode: number | null;
  durationMs: number;
  error: string | null;
}

/**
 * One HTTP POST; never throws (a refused connection, a refused target or a timeout is an outcome, with its reason).
 * Sent with node:http so the connection's address can be checked as it is resolved (./target); redirects are not
 * followed (a 3xx is a failed attempt).
 */
export function sendOnce(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SendResult> {
  const started = performance.now();
  const outcome = (statusCode: number | null, error: string | null): SendResult => ({
    statusCode,
    durationMs: Math.round(performance.now() - started),
    error,
  });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve(outcome(null, "the endpoint's URL is not a valid URL; delete the endpoint and add it again"));
  }
  const refused = refusedHost(target);
  if (refused) return Promise.resolve(outcome(null, refused));
  return new Promise<SendResult>((resolve) => {
    const send = target.protocol === "https:" ? https.request : http.request;
    const req = send(
      target,
      { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) }, lookup: publicOnlyLookup },
      (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on("data", (chunk: Buffer) => {
          if (kept < 1024) chunks.push(chunk);
          kept += chunk.length;
        });
        res.on("error", (err) => finish(outcome(status || null, err.message)));
        res.on("end", () => {
          if (status >= 200 && status < 300) return finish(outcome(status, null));
          const snippet = Buffer.concat(chunks).toString("utf8").trim().slice(0, 200);
          finish(outcome(status, `HTTP ${status}${snippet ? `: ${snippet}` : ""}`));
        });
      },
    );
    const timer = setTimeout(
      () => req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: "TIMEOUT" })),
      timeoutMs,
    );
    const finish = (result: SendResult) => {
      clearTimeout(timer);
      resolve(result);
    };
    req.on("error", (err: NodeJS.ErrnoException) => {
      const reason =
        err instanceof PrivateTargetError || err.code === "TIMEOUT" ? err.message : (err.code ?? err.message ?? "request failed");
      finish(outcome(null, reason));
    });
    req.end(body);
  });
}

/**
 * In how many milliseconds a delivery comes due (an endpoint's oldest pending one, at its retry time — or, while
 * another worker holds the endpoint, when that lease runs out); null when nothing is pending. A worker with nothing
 * to do sleeps until then, unless a new event wakes it first (lib/runtime/after-commit).
 */
export async function nextWebhookDueInMs(db: Store): Promise<number | null> {
  const { rows } = await sql<{ ms: number | null }>`
    SELECT (EXTRACT(EPOCH FROM min(GREATEST(head."nextAttemptAt", x."leaseExpiresAt")) - now()) * 1000)::float8 AS ms
    FROM "WebhookEndpoint" x
    CROSS JOIN LATERAL (
      SELECT d."nextAttemptAt" FROM "WebhookDelivery" d WHERE d."endpointId" = x.id AND d.status = 'pending' ORDER BY d.id LIMIT 1
    ) head
    WHERE x.enabled`.execute(db);
  const ms = rows[0]?.ms;
  return ms === null || ms === undefined ? null : Number(ms);
}

/** Claims up to `limit` enabled endpoints whose oldest pending delivery is due, each under a fresh lease. */
async function claimEndpoints(db: Store, owner: string, leaseMs: number, limit: number): Promise<ClaimedEndpoint[]> {
  const { rows } = await sql<ClaimedEndpoint>`
    UPDATE "WebhookEndpoint" e SET "leaseOwner" = ${owner}, "leaseExpiresAt" = now() + make_interval(secs => ${leaseMs / 1000}::float8)
    WHERE e.id IN (
      SELECT x.id FROM "WebhookEndpoint" x
      WHERE x.enabled AND (x."leaseExpiresAt" IS NULL OR x."leaseExpiresAt" < now())
        AND (SELECT d."nextAttemptAt" FROM "WebhookDelivery" d WHERE d."endpointId" = x.id AND d.status = 'pending'
             ORDER BY d.id LIMIT 1) <= now()
      LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING e.id, e."tenantId", e.url, e.secret`.execute(db);
  return rows;
}

async function headDelivery(db: Store, endpointId: string): Promise<HeadDelivery | null> {
  const { rows } = await sql<HeadDelivery>`
    SELECT d.id, d."eventId", d."eventType", d.attempts, d."nextAttemptAt" <= now() AS due, ev.payload,
           to_char(ev."createdAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt"
    FROM "WebhookDelivery" d JOIN "WebhookEvent" ev ON ev.id = d."eventId" JOIN "WebhookEndpoint" e ON e.id = d."endpointId"
    WHERE d."endpointId" = ${endpointId} AND d.status = 'pending' AND e.enabled ORDER BY d.id LIMIT 1`.execute(db);
  return rows[0] ?? null;
}

type Recorded = "delivered" | "retrying" | "failed" | "lease-lost";

/** Records one attempt, only while this claim still holds the endpoint (and renews it). */
async function recordAttempt(
  db: Store,
  ep: ClaimedEndpoint,
  owner: string,
  d: HeadDelivery,
  r: SendResult,
  o: Required<Omit<DeliveryOptions, "afterSend" | "workerId">>,
): Promise<Recorded> {
  const attempt = d.attempts + 1;
  const ok = r.error === null;
  const givingUp = !ok && attempt >= o.maxAttempts;
  const retryInMs = ok || givingUp ? null : retryDelayMs(attempt, o.baseDelayMs, o.maxDelayMs);
  return db.transaction().execute(async (tx) => {
    const held = await sql`UPDATE "WebhookEndpoint" SET "leaseExpiresAt" = now() + make_interval(secs => ${o.leaseMs / 1000}::float8)
      WHERE id = ${ep.id} AND "leaseOwner" = ${owner} RETURNING id`.execute(tx);
    if (!held.rows.length) return "lease-lost";
    const next = retryInMs === null ? sql`NULL` : sql`now() + make_interval(secs => ${retryInMs / 1000}::float8)`;
    await sql`UPDATE "WebhookDelivery" SET attempts = ${attempt}, "lastStatusCode" = ${r.statusCode}, "lastError" = ${r.error},
        status = ${ok ? "delivered" : givingUp ? "failed" : "pending"}::"WebhookDeliveryStatus",
        "deliveredAt" = ${ok ? sql`now()` : sql`NULL`},
        "nextAttemptAt" = coalesce(${next}, "nextAttemptAt")
      WHERE id = ${d.id} AND status = 'pending'`.execute(tx);
    await sql`INSERT INTO "WebhookAttempt" (id, "deliveryId", attempt, "statusCode", "durationMs", error, "nextRetryAt")
      VALUES (${randomUUID()}, ${d.id}, ${attempt}, ${r.statusCode}, ${r.durationMs}, ${r.error}, ${next})
      ON CONFLICT ("deliveryId", attempt) DO NOTHING`.execute(tx);
    return ok ? "delivered" : givingUp ? "failed" : "retrying";
  });
}

/**
 * Signs and sends one delivery. A secret that cannot sign (not whsec_ + base64: a row edited by hand — the product
 * makes every secret) is an outcome like a refused connection: nothing goes out, and the attempt and its reason are in
 * the endpoint's delivery log, retried like any failure, instead of the endpoint being held at every claim unseen.
 */
function sendSigned(ep: ClaimedEndpoint, eventId: string, body: string, timeoutMs: number): Promise<SendResult> {
  let headers: Record<string, string>;
  try {
    headers = signedHeaders(ep.secret, eventId, body);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    const error = `the endpoint's signing secret is not a Standard Webhooks secret and cannot sign (${why}); delete the endpoint and add it again for a new secret`;
    return Promise.resolve({ statusCode: null, durationMs: 0, error });
  }
  return sendOnce(ep.url, headers, body, timeoutMs);
}

/** Serves one claimed endpoint: its due deliveries in order, until one must wait for a retry. */
async function serveEndpoint(
  db: Store,
  ep: ClaimedEndpoint,
  owner: string,
  o: Required<Omit<DeliveryOptions, "afterSend" | "workerId">>,
  afterSend: DeliveryOptions["afterSend"],
): Promise<{ attempts: number; delivered: number }> {
  let attempts = 0;
  let delivered = 0;
  for (let i = 0; i < o.perClaim; i++) {
    const d = await headDelivery(db, ep.id);
    if (!d?.due) break;
    const body = webhookBody({ type: d.eventType, createdAt: d.createdAt, payload: d.payload });
    const result = await sendSigned(ep, d.eventId, body, o.timeoutMs);
    await afterSend?.({ deliveryId: d.id, eventId: d.eventId, endpointId: ep.id });
    const recorded = await recordAttempt(db, ep, owner, d, result, o);
    if (recorded === "lease-lost") return { attempts, delivered }; // another worker has the endpoint now
    attempts++;
    if (recorded === "delivered") delivered++;
    if (recorded === "retrying") break; // later events wait behind it
  }
  await sql`UPDATE "WebhookEndpoint" SET "leaseOwner" = NULL, "leaseExpiresAt" = NULL WHERE id = ${ep.id} AND "leaseOwner" = ${owner}`.execute(
    db,
  );
  return { attempts, delivered };
}

/**
 * One delivery pass: claims the endpoints with a due delivery and serves them concurrently. An endpoint whose
 * serving threw (a crash, a lost database) keeps its lease until it expires, like a crashed worker's would.
 */
export async function deliverDueWebhooks(
  db: Store,
  opts: DeliveryOptions,
): Promise<{ endpoints: number; attempts: number; delivered: number }> {
  const o = optionsOf(opts);
  const owner = `${opts.workerId}:webhooks:${randomUUID()}`;
  const claimed = await claimEndpoints(db, owner, o.leaseMs, o.maxEndpoints);
  const results = await Promise.allSettled(claimed.map((ep) => serveEndpoint(db, ep, owner, o, opts.afterSend)));
  let attempts = 0;
  let delivered = 0;
  for (const r of results) {
    if (r.status === "fulfilled") {
      attempts += r.value.attempts;
      delivered += r.value.delivered;
    } else log.error({ err: r.reason }, "delivering webhooks to an endpoint failed");
  }
  return { endpoints: claimed.length, attempts, delivered };
}

/**
 * The worker's way (lib/runtime/after-commit): claims the endpoints with deliveries due, up to `maxEndpoints` served at
 * once by this worker (`serving`), and serves each in the background — a receiver that takes its time holds up its
 * own endpoint only, never the sealing of audit records or another endpoint's deliveries. `served` is called as each
 * finishes (the loop looks again: more may be due). Returns how many endpoints it started serving.
 */
export async function startDueWebhooks(db: Store, opts: DeliveryOptions, serving: Set<Promise<void>>, served: () => void): Promise<number> {
  const o = optionsOf(opts);
  const room = o.maxEndpoints - serving.size;
  if (room <= 0) return 0;
  const owner = `${opts.workerId}:webhooks:${randomUUID()}`;
  const claimed = await claimEndpoints(db, owner, o.leaseMs, room);
  for (const ep of claimed) {
    const done: Promise<void> = serveEndpoint(db, ep, owner, o, opts.afterSend)
      .then(() => undefined)
      .catch((err: unknown) => {
        if (!noteDatabaseFailure(err, "worker")) log.error({ err }, "delivering webhooks to an endpoint failed");
      })
      .finally(() => {
        serving.delete(done);
        served();
      });
    serving.add(done);
  }
  return claimed.length;
}

function optionsOf(opts: DeliveryOptions): Required<Omit<DeliveryOptions, "afterSend" | "workerId">> {
  return {
    leaseMs: opts.leaseMs ?? DELIVERY_DEFAULTS.leaseMs,
    timeoutMs: opts.timeoutMs ?? DELIVERY_DEFAULTS.timeoutMs,
    baseDelayMs: opts.baseDelayMs ?? DELIVERY_DEFAULTS.baseDelayMs,
    maxDelayMs: opts.maxDelayMs ?? DELIVERY_DEFAULTS.maxDelayMs,
    maxAttempts: opts.maxAttempts ?? DELIVERY_DEFAULTS.maxAttempts,
    maxEndpoints: opts.maxEndpoints ?? DELIVERY_DEFAULTS.maxEndpoints,
    perClaim: opts.perClaim ?? DELIVERY_DEFAULTS.perClaim,
  };
}
