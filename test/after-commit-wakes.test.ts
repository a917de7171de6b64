import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { countStatements } from "@/bench/peers/scenario";
import { sealRetries } from "@/lib/audit/chain";
import { storeOf } from "@/lib/db/kysely";
import { stopListeners } from "@/lib/db/listener";
import { runAfterCommitLoop } from "@/lib/runtime/after-commit";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { createWebhookEndpoint } from "@/lib/settings/webhooks";
import { queueTestEvent } from "@/lib/webhooks/outbox";
import { refuseSealingOf, refuseWrites } from "./refused-writes";
import { createHarness, type Harness } from "./runtime-harness";

// A worker's after-commit work — sealing audit records, fanning webhook events out and sending them — is done when
// the database says there is some (a NOTIFY from the statement that wrote it) or when a webhook retry comes due,
// not by every worker looking for it every second: a worker at rest asks the database nothing.

let h: Harness;
let deps: RuntimeDeps;
let stop: AbortController;
let loop: Promise<void> | null;
let receiver: { url: string; attempts: number[]; close(): Promise<void> } | null;

beforeEach(async () => {
  h = await createHarness();
  deps = { ...h.deps, databaseUrl: h.tdb.url, workerId: "after-commit-test" };
  stop = new AbortController();
  loop = null;
  receiver = null;
});
afterEach(async () => {
  stop.abort();
  await loop;
  await stopListeners();
  await receiver?.close();
  await h.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, ok: () => Promise<boolean> | boolean, ms: number) {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(25);
  }
}
/** Until `counter` has seen no statement for `quietMs` (the loop done with what it was doing). */
async function untilQuiet(counter: { count: number }, quietMs: number, ms: number) {
  const end = Date.now() + ms;
  let seen = counter.count;
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > end) throw new Error(`never ${quietMs} ms without a statement within ${ms} ms`);
    await sleep(25);
    if (counter.count !== seen) [seen, since] = [counter.count, Date.now()];
  }
}
const unsealed = async () => h.db.auditEvent.count({ where: { tenantId: h.acme.id, seq: null } });
const admin = () => ({ tenantId: h.acme.id, staffId: h.staff.ada.id });

/** An HTTP receiver that answers 500 to its first `failFirst` requests, then 204, noting when each came. */
async function startReceiver(failFirst: number) {
  const attempts: number[] = [];
  let failuresLeft = failFirst;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      attempts.push(Date.now());
      res.statusCode = failuresLeft-- > 0 ? 500 : 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    attempts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("a worker's after-commit loop", () => {
  it("asks the database nothing at rest, and seals a new audit record as soon as it commits", async () => {
    // Passes 100 ms apart at most, and a minute at rest: only a notification can make it look again within the test.
    loop = runAfterCommitLoop(deps, { signal: stop.signal, intervalMs: 100, idleMs: 60_000 });
    await until("the seed's audit records sealed", async () => (await unsealed()) === 0, 5000);

    const counter = countStatements(pg.Client);
    try {
      // The listener up and the pass after the sealing one done — on a loaded machine that pass can take a while.
      await untilQuiet(counter, 700, 10_000);
      const before = counter.count;
      await sleep(1500);
      expect(counter.count - before).toBe(0); // before: a pass of three statements every 100 ms

      await h.db.auditEvent.create({ data: { tenantId: h.acme.id, actor: "test", action: "test.wake", data: {} } });
      const wrote = Date.now();
      await until("the new record sealed", async () => (await unsealed()) === 0, 2000);
      expect(Date.now() - wrote).toBeLessThan(1500);
    } finally {
      counter.restore();
    }
  });

  it("sends a webhook event as soon as it commits, and its retry when it comes due with nothing else waking it", async () => {
    receiver = await startReceiver(1);
    const { endpoint } = await createWebhookEndpoint(h.db, admin(), { url: receiver.url, eventTypes: ["handoff.created"] });
    loop = runAfterCommitLoop(deps, {
      signal: stop.signal,
      intervalMs: 100,
      idleMs: 60_000,
      delivery: { workerId: deps.workerId, baseDelayMs: 1500 },
    });
    await sleep(1000); // at rest, listening

    const queued = Date.now();
    await queueTestEvent(storeOf(h.db), { id: endpoint.id, tenantId: h.acme.id }, "test");
    const r = receiver;
    await until("the first attempt", () => r.attempts.length === 1, 1500);
    expect(r.attempts[0] - queued).toBeLessThan(1000);
    // It failed: the retry is due 1.5–1.65 s later, and nothing is written meanwhile to wake the loop.
    await until("the retry", () => r.attempts.length === 2, 4000);
    const gap = r.attempts[1] - r.attempts[0];
    expect(gap).toBeGreaterThanOrEqual(1400);
    expect(gap).toBeLessThan(3000);
    // (the attempt is recorded once the receiver has answered)
    const status = async () => (await h.db.webhookDelivery.findFirstOrThrow({ where: { endpointId: endpoint.id } })).status;
    await until("the delivery recorded as delivered", async () => (await status()) === "delivered", 2000);
  });

  it("tries a shop's sealing that failed again when its retry comes due, with nothing else waking it", async () => {
    // acme's records cannot be sealed.
    const refused = await refuseSealingOf(h.db, h.acme.id);
    const tries = refused.tries;
    await h.db.auditEvent.create({ data: { tenantId: h.acme.id, actor: "test", action: "test.unsealable", data: {} } });
    sealRetries.settled(h.acme.id); // no earlier test's failure of this shop in the process's backoff
    loop = runAfterCommitLoop(deps, { signal: stop.signal, intervalMs: 100, idleMs: 60_000 });
    await until("the first try", async () => (await tries()) === 1, 3000);
    const first = Date.now();
    // Its retry is due 2 s later; nothing is written meanwhile, and the loop's idle wait is a minute.
    await until("the retry", async () => (await tries()) === 2, 5000);
    expect(Date.now() - first).toBeGreaterThanOrEqual(1500);
    await refused.stop();
    await until("the records sealed at the retry after", async () => (await unsealed()) === 0, 8000);
  });

  it("tries an event's fan-out that failed again when its retry comes due, with nothing else waking it", async () => {
    loop = runAfterCommitLoop(deps, { signal: stop.signal, intervalMs: 100, idleMs: 60_000 });
    await until("the seed's audit records sealed", async () => (await unsealed()) === 0, 5000);
    const { endpoint } = await createWebhookEndpoint(h.db, admin(), { url: "http://127.0.0.1:9/hooks", eventTypes: ["handoff.created"] });
    const refused = await refuseWrites(h.db, {
      name: "refuse_fan_out",
      op: "INSERT",
      table: "WebhookDelivery",
      message: "this event cannot be fanned out (for the test)",
    });
    // Each failure counts twice: the statement for the pass's events, then the event on its own.
    const tries = async () => (await refused.tries()) / 2;
    await queueTestEvent(storeOf(h.db), { id: endpoint.id, tenantId: h.acme.id }, "test");
    await until("the first try", async () => (await tries()) === 1, 3000);
    const first = Date.now();
    // Its retry is due 2 s later; nothing is written meanwhile, and the loop's idle wait is a minute.
    await until("the retry", async () => (await tries()) === 2, 5000);
    expect(Date.now() - first).toBeGreaterThanOrEqual(1500);
  });
});
