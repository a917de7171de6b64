import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { runWorkerOnce } from "@/lib/runtime/worker";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  listWebhookEndpoints,
  sendTestWebhook,
  setWebhookEndpointEnabled,
  webhookDeliveryLog,
} from "@/lib/settings/webhooks";
import { type DeliveryOptions, deliverDueWebhooks, retryDelayMs } from "@/lib/webhooks/deliver";
import { fanOutWebhookEvents } from "@/lib/webhooks/outbox";
import { createHarness, type Harness } from "./runtime-harness";

// Webhooks end to end on a real database and a real HTTP receiver on localhost: signed with the Standard Webhooks
// scheme (checked with the `standardwebhooks` library itself), retried with backoff, in order, once per event.

interface Received {
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
  id: string;
  type: string;
  data: Record<string, unknown>;
  status: number;
}

/** A receiver that answers 500 to its first `failFirst` requests, then 204. */
async function startReceiver(failFirst = 0): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  let failuresLeft = failFirst;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const parsed = JSON.parse(body) as { type: string; data: Record<string, unknown> };
      const status = failuresLeft > 0 ? 500 : 204;
      if (failuresLeft > 0) failuresLeft--;
      received.push({
        at: Date.now(),
        headers: req.headers,
        body,
        id: String(req.headers["webhook-id"]),
        type: parsed.type,
        data: parsed.data,
        status,
      });
      res.statusCode = status;
      res.end(status === 500 ? "temporarily down" : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let h: Harness;
let receivers: Array<{ close(): Promise<void> }>;
beforeEach(async () => {
  h = await createHarness();
  receivers = [];
});
afterEach(async () => {
  for (const r of receivers) await r.close();
  await h.close();
});

async function receiver(failFirst = 0) {
  const r = await startReceiver(failFirst);
  receivers.push(r);
  return r;
}

const admin = () => ({ tenantId: h.acme.id, staffId: h.staff.ada.id });
const REFUND_A1002 = "Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.";

/** Fans out and delivers until `done` holds (or fails the test after `ms`). */
async function deliverUntil(done: () => boolean, opts: Partial<DeliveryOptions> = {}, ms = 15_000): Promise<void> {
  const db = storeOf(h.db);
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error("webhooks were not delivered in time");
    await fanOutWebhookEvents(db);
    await deliverDueWebhooks(db, { workerId: "test", baseDelayMs: 150, ...opts });
    await sleep(25);
  }
}

function verify(secret: string, r: Received) {
  return new Webhook(secret).verify(r.body, {
    "webhook-id": String(r.headers["webhook-id"]),
    "webhook-timestamp": String(r.headers["webhook-timestamp"]),
    "webhook-signature": String(r.headers["webhook-signature"]),
  });
}

describe("signed webhooks from the outbox", () => {
  it("signs every attempt, retries with growing delays after failures, then succeeds; each attempt is logged", async () => {
    const rx = await receiver(2);
    const { endpoint, secret } = await createWebhookEndpoint(h.db, admin(), { url: rx.url, eventTypes: ["handoff.created"] });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    const { handoffs } = await h.say(REFUND_A1002);

    await deliverUntil(() => rx.received.some((r) => r.status === 204));
    expect(rx.received.map((r) => r.status)).toEqual([500, 500, 204]);
    // One event, one id on every attempt, each attempt signed (the library's own verification).
    expect(new Set(rx.received.map((r) => r.id)).size).toBe(1);
    for (const r of rx.received) expect(verify(secret, r)).toMatchObject({ type: "handoff.created", data: { handoffId: handoffs[0]!.id } });
    expect(() => verify("whsec_" + Buffer.alloc(32, 1).toString("base64"), rx.received[2]!)).toThrow();
    expect(rx.received[2]!.data).toMatchObject({ kind: "APPROVAL", amountCents: 25000, record: { toolName: "refund_order" } });
    const log = await webhookDeliveryLog(h.db, admin(), endpoint.id);
    // Backoff: the retry after the second failure was scheduled twice as far out (base 150 ms, up to 10% jitter),
    // and the receiver waited at least that long between attempts.
    const scheduled = log.deliveries[0]!.attemptLog.slice(0, 2).map((a) => a.nextRetryAt!.getTime() - a.at.getTime());
    expect(scheduled[0]).toBeGreaterThanOrEqual(150);
    expect(scheduled[0]).toBeLessThanOrEqual(170);
    expect(scheduled[1]).toBeGreaterThanOrEqual(300);
    expect(scheduled[1]).toBeLessThanOrEqual(335);
    expect(rx.received[1]!.at - rx.received[0]!.at).toBeGreaterThanOrEqual(scheduled[0]! - 20);
    expect(rx.received[2]!.at - rx.received[1]!.at).toBeGreaterThanOrEqual(scheduled[1]! - 20);

    expect(log.deliveries).toHaveLength(1);
    const [d] = log.deliveries;
    expect(d).toMatchObject({ eventId: rx.received[0]!.id, eventType: "handoff.created", status: "delivered", attempts: 3 });
    expect(d!.attemptLog.map((a) => [a.attempt, a.statusCode, a.error?.slice(0, 8) ?? null, a.nextRetryAt !== null])).toEqual([
      [1, 500, "HTTP 500", true],
      [2, 500, "HTTP 500", true],
      [3, 204, null, false],
    ]);
    expect(d!.attemptLog.every((a) => a.durationMs >= 0)).toBe(true);
  });

  it("backs off exponentially, capped", () => {
    const none = () => 0;
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, 1000, 10_000, none))).toEqual([1000, 2000, 4000, 8000, 10_000]);
    expect(retryDelayMs(1, 1000, 10_000, () => 1)).toBe(1100);
  });

  it("delivers an endpoint's events in order, a later one waiting while an earlier one is retried", async () => {
    const rx = await receiver(1);
    const { secret } = await createWebhookEndpoint(h.db, admin(), {
      url: rx.url,
      eventTypes: ["handoff.created", "handoff.decided", "run.completed"],
    });
    const { handoffs } = await h.say(REFUND_A1002);
    await h.decide(handoffs[0]!.id, "raj@acme.test", "approve");
    const events = await h.db.webhookEvent.findMany({ where: { tenantId: h.acme.id, fannedOutAt: null }, orderBy: { seq: "asc" } });
    const expected = events.filter((e) => ["handoff.created", "handoff.decided", "run.completed"].includes(e.type));
    expect(expected.map((e) => e.type)).toEqual(["handoff.created", "handoff.decided", "run.completed"]);

    await deliverUntil(() => rx.received.filter((r) => r.status === 204).length === 3);
    // The first event failed once and was retried before anything after it was sent.
    expect(rx.received.map((r) => [r.type, r.status])).toEqual([
      ["handoff.created", 500],
      ["handoff.created", 204],
      ["handoff.decided", 204],
      ["run.completed", 204],
    ]);
    expect(rx.received.filter((r) => r.status === 204).map((r) => r.id)).toEqual(expected.map((e) => e.id));
    for (const r of rx.received) verify(secret, r);
    expect(rx.received[2]!.data).toMatchObject({ handoffId: handoffs[0]!.id, status: "APPROVED", decidedBy: "raj@acme.test" });
  });

  it("a crash between sending and recording resends the SAME event id, and only one delivery exists", async () => {
    const rx = await receiver();
    const { endpoint, secret } = await createWebhookEndpoint(h.db, admin(), { url: rx.url, eventTypes: ["handoff.created"] });
    await h.say(REFUND_A1002);
    const db = storeOf(h.db);
    await fanOutWebhookEvents(db);
    // The first worker "dies" after the endpoint answered, before it recorded anything.
    const crashed = await deliverDueWebhooks(db, {
      workerId: "doomed",
      leaseMs: 300,
      afterSend: () => {
        throw new Error("crash");
      },
    });
    expect(crashed).toMatchObject({ endpoints: 1, attempts: 0 });
    expect(rx.received).toHaveLength(1);
    // While its lease lasts nobody else sends; after it expires another worker sends the same delivery again.
    expect((await deliverDueWebhooks(db, { workerId: "rescuer" })).endpoints).toBe(0);
    await sleep(400);
    expect(await deliverDueWebhooks(db, { workerId: "rescuer" })).toMatchObject({ endpoints: 1, attempts: 1, delivered: 1 });
    expect(rx.received).toHaveLength(2);
    expect(rx.received[1]!.id).toBe(rx.received[0]!.id);
    for (const r of rx.received) verify(secret, r);
    // A repeated fan-out queues nothing new, and one delivery row stands for the event.
    await h.db.webhookEvent.updateMany({ where: { id: rx.received[0]!.id }, data: { fannedOutAt: null } });
    expect(await fanOutWebhookEvents(db)).toMatchObject({ events: 1, deliveries: 0 });
    const rows = await h.db.webhookDelivery.findMany({ where: { endpointId: endpoint.id } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ eventId: rx.received[0]!.id, status: "delivered", attempts: 1 });
    expect(await deliverDueWebhooks(db, { workerId: "rescuer" })).toMatchObject({ endpoints: 0 });
    expect(rx.received).toHaveLength(2);
  });

  it("an endpoint whose secret cannot sign or whose URL is not one (a row edited by hand) gets a failed attempt in its delivery log, not a silent retry at every claim", async () => {
    const rx = await receiver();
    const { endpoint } = await createWebhookEndpoint(h.db, admin(), { url: rx.url, eventTypes: ["handoff.created"] });
    await h.db.webhookEndpoint.update({ where: { id: endpoint.id }, data: { secret: "whsec_%%" } });
    await h.say(REFUND_A1002);
    const db = storeOf(h.db);
    await fanOutWebhookEvents(db);

    expect(await deliverDueWebhooks(db, { workerId: "w1", baseDelayMs: 60_000 })).toMatchObject({
      endpoints: 1,
      attempts: 1,
      delivered: 0,
    });
    expect(rx.received).toHaveLength(0); // nothing unsigned goes out
    const log = await webhookDeliveryLog(h.db, admin(), endpoint.id);
    expect(log.deliveries[0]).toMatchObject({ status: "pending", attempts: 1 });
    const [attempt] = log.deliveries[0]!.attemptLog;
    expect(attempt).toMatchObject({ attempt: 1, statusCode: null });
    expect(attempt!.error).toMatch(/signing secret .*cannot sign.*add it again/);
    expect(attempt!.nextRetryAt).not.toBeNull();
    // Let go at once, not held for the lease's minute: it waits for its retry like any failed delivery.
    expect((await h.db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } })).leaseOwner).toBeNull();

    // The same for a URL that is not one.
    await h.db.webhookEndpoint.update({ where: { id: endpoint.id }, data: { secret: `whsec_${Buffer.alloc(32, 7).toString("base64")}` } });
    await h.db.webhookDelivery.updateMany({ where: { endpointId: endpoint.id }, data: { nextAttemptAt: new Date(0) } });
    await h.db.$executeRawUnsafe(`UPDATE "WebhookEndpoint" SET url = '::not a url' WHERE id = '${endpoint.id}'`);
    expect(await deliverDueWebhooks(db, { workerId: "w1", baseDelayMs: 60_000 })).toMatchObject({ endpoints: 1, attempts: 1 });
    const second = (await webhookDeliveryLog(h.db, admin(), endpoint.id)).deliveries[0]!.attemptLog[1];
    expect(second).toMatchObject({ attempt: 2, statusCode: null });
    expect(second!.error).toMatch(/URL is not a valid URL/);
  });

  it("two workers at once send each event once", async () => {
    const rx = await receiver();
    await createWebhookEndpoint(h.db, admin(), { url: rx.url, eventTypes: ["handoff.created", "handoff.decided", "run.completed"] });
    const { handoffs } = await h.say(REFUND_A1002);
    await h.decide(handoffs[0]!.id, "raj@acme.test", "approve");
    const db = storeOf(h.db);
    await fanOutWebhookEvents(db);
    await Promise.all([deliverDueWebhooks(db, { workerId: "w1" }), deliverDueWebhooks(db, { workerId: "w2" })]);
    await deliverUntil(() => rx.received.length >= 3);
    expect(rx.received.map((r) => r.type)).toEqual(["handoff.created", "handoff.decided", "run.completed"]);
    expect(new Set(rx.received.map((r) => r.id)).size).toBe(3);
  });

  it("an endpoint deleted while its events are fanned out is left out; the other endpoints' deliveries are queued, nothing fails", async () => {
    const rx = await receiver();
    const gone = await createWebhookEndpoint(h.db, admin(), { url: rx.url, eventTypes: ["handoff.created"] });
    const kept = await createWebhookEndpoint(h.db, admin(), { url: `${rx.url}/kept`, eventTypes: ["handoff.created"] });
    await h.say(REFUND_A1002);
    // The admin's delete has run but not committed when the fan-out reads the endpoints; it commits while the
    // fan-out waits on the row (before: the delivery's foreign key failed the whole pass, logged as an error).
    const adminTx = new pg.Client({ connectionString: h.tdb.url });
    await adminTx.connect();
    try {
      await adminTx.query("BEGIN");
      await adminTx.query(`DELETE FROM "WebhookEndpoint" WHERE id = $1`, [gone.endpoint.id]);
      const fanning = fanOutWebhookEvents(storeOf(h.db));
      await sleep(300);
      await adminTx.query("COMMIT");
      expect(await fanning).toMatchObject({ events: 1, deliveries: 1 });
    } finally {
      await adminTx.end();
    }
    const rows = await h.db.webhookDelivery.findMany({ where: { eventType: "handoff.created" } });
    expect(rows.map((r) => r.endpointId)).toEqual([kept.endpoint.id]);
  });

  it("another shop's endpoints never receive this shop's events; unsubscribed types are not sent", async () => {
    const acmeRx = await receiver();
    const globexRx = await receiver();
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    const globexAdmin = await h.db.staffUser.create({
      data: { tenantId: globex.id, email: "gina@globex.test", name: "Gina", role: "admin" },
    });
    await createWebhookEndpoint(h.db, admin(), { url: acmeRx.url, eventTypes: ["run.completed"] });
    const globexEndpoint = await createWebhookEndpoint(
      h.db,
      { tenantId: globex.id, staffId: globexAdmin.id },
      {
        url: globexRx.url,
        eventTypes: ["handoff.created", "handoff.decided", "escalation.created", "run.completed", "run.dead_lettered"],
      },
    );
    const { handoffs } = await h.say(REFUND_A1002);
    await h.decide(handoffs[0]!.id, "raj@acme.test", "approve");
    await deliverUntil(() => acmeRx.received.length >= 1);
    await runWorkerOnce(h.deps); // the worker's own pass: nothing more for anyone
    expect(acmeRx.received.map((r) => r.type)).toEqual(["run.completed"]);
    expect(globexRx.received).toEqual([]);
    expect(await h.db.webhookDelivery.count({ where: { endpointId: globexEndpoint.endpoint.id } })).toBe(0);
    // ...and its admin cannot read, change or test acme's endpoints.
    const [acmeEndpoint] = await listWebhookEndpoints(h.db, admin());
    const globexActor = { tenantId: globex.id, staffId: globexAdmin.id };
    for (const attempt of [
      () => webhookDeliveryLog(h.db, globexActor, acmeEndpoint!.id),
      () => setWebhookEndpointEnabled(h.db, globexActor, acmeEndpoint!.id, false),
      () => sendTestWebhook(h.db, globexActor, acmeEndpoint!.id),
      () => deleteWebhookEndpoint(h.db, globexActor, acmeEndpoint!.id),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ code: "NOT_FOUND" });
    }
    expect((await listWebhookEndpoints(h.db, globexActor)).map((e) => e.id)).toEqual([globexEndpoint.endpoint.id]);
  });

  it("writes the outbox only for what an enabled endpoint subscribes to: nothing for a shop without webhooks", async () => {
    const types = async () =>
      (await h.db.webhookEvent.findMany({ where: { tenantId: h.acme.id }, orderBy: { seq: "asc" } })).map((e) => e.type);
    // No endpoint: a parked refund, its approval and the run's end leave no outbox row (nobody would ever read one).
    const first = await h.say(REFUND_A1002);
    await h.decide(first.handoffs[0]!.id, "raj@acme.test", "approve");
    expect(await types()).toEqual([]);
    // A disabled endpoint subscribes to nothing.
    const { endpoint } = await createWebhookEndpoint(h.db, admin(), {
      url: "https://hooks.example.com/in",
      eventTypes: ["handoff.created", "run.completed"],
    });
    await setWebhookEndpointEnabled(h.db, admin(), endpoint.id, false);
    await h.db.order.updateMany({ where: { number: "A-1002" }, data: { refundedCents: 0 } });
    const second = await h.say(REFUND_A1002);
    await h.decide(second.handoffs[0]!.id, "raj@acme.test", "approve");
    expect(await types()).toEqual([]);
    // Enabled: exactly the types it subscribes to (the decision's own handoff.decided is not one of them).
    await setWebhookEndpointEnabled(h.db, admin(), endpoint.id, true);
    await h.db.order.updateMany({ where: { number: "A-1002" }, data: { refundedCents: 0 } });
    const third = await h.say(REFUND_A1002);
    await h.decide(third.handoffs[0]!.id, "raj@acme.test", "approve");
    expect(await types()).toEqual(["handoff.created", "run.completed"]);
  });
});

describe("webhook endpoints in settings", () => {
  it("are for admins only, checked in the data layer", async () => {
    for (const who of [h.staff.rita, h.staff.sol]) {
      const err = await listWebhookEndpoints(h.db, { tenantId: h.acme.id, staffId: who.id }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe("FORBIDDEN");
      await expect(
        createWebhookEndpoint(
          h.db,
          { tenantId: h.acme.id, staffId: who.id },
          { url: "https://example.com/h", eventTypes: ["run.completed"] },
        ),
      ).rejects.toMatchObject({ code: "FORBIDDEN" });
    }
  });

  it("refuse bad input with the field named, and keep nothing", async () => {
    for (const [input, field] of [
      [{ url: "ftp://example.com/h", eventTypes: ["run.completed"] }, "url"],
      [{ url: "not a url", eventTypes: ["run.completed"] }, "url"],
      [{ url: "https://user:pw@example.com/h", eventTypes: ["run.completed"] }, "url"],
      [{ url: "https://example.com/h", eventTypes: [] }, "eventTypes"],
      [{ url: "https://example.com/h", eventTypes: ["run.completed", "order.shipped"] }, "eventTypes"],
    ] as const) {
      await expect(createWebhookEndpoint(h.db, admin(), input)).rejects.toMatchObject({ code: "INVALID_INPUT", details: { field } });
    }
    expect(await h.db.webhookEndpoint.count()).toBe(0);
  });

  it("send a test event to one endpoint only; a disabled endpoint gets nothing; deleting removes the log; all audited", async () => {
    const rx1 = await receiver();
    const rx2 = await receiver();
    const one = await createWebhookEndpoint(h.db, admin(), { url: rx1.url, eventTypes: ["run.completed"] });
    const two = await createWebhookEndpoint(h.db, admin(), { url: rx2.url, eventTypes: ["run.completed"] });
    const { eventId } = await sendTestWebhook(h.db, admin(), one.endpoint.id);
    await deliverUntil(() => rx1.received.length === 1);
    expect(rx1.received[0]).toMatchObject({ id: eventId, type: "webhook.test" });
    verify(one.secret, rx1.received[0]!);
    expect(() => verify(two.secret, rx1.received[0]!)).toThrow();
    expect(rx2.received).toEqual([]);

    await setWebhookEndpointEnabled(h.db, admin(), two.endpoint.id, false);
    await expect(sendTestWebhook(h.db, admin(), two.endpoint.id)).rejects.toMatchObject({ code: "CONFLICT" });
    await h.say("Hi, I'm dana@example.com. Where is my order A-1001?");
    await deliverUntil(() => rx1.received.length === 2);
    expect(rx1.received[1]!.type).toBe("run.completed");
    expect(rx2.received).toEqual([]);

    await deleteWebhookEndpoint(h.db, admin(), one.endpoint.id);
    expect(await h.db.webhookDelivery.count({ where: { endpointId: one.endpoint.id } })).toBe(0);
    expect((await listWebhookEndpoints(h.db, admin())).map((e) => [e.id, e.enabled])).toEqual([[two.endpoint.id, false]]);
    const audit = await h.db.auditEvent.findMany({
      where: { tenantId: h.acme.id, action: { startsWith: "webhook_endpoint." } },
      orderBy: { pos: "asc" },
    });
    expect(audit.map((a) => [a.action, a.actor])).toEqual([
      ["webhook_endpoint.created", "ada@acme.test"],
      ["webhook_endpoint.created", "ada@acme.test"],
      ["webhook_endpoint.disabled", "ada@acme.test"],
      ["webhook_endpoint.deleted", "ada@acme.test"],
    ]);
    // The secret is nowhere in the audit trail.
    expect(JSON.stringify(audit, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(one.secret.slice(6, 30));
  });
});
