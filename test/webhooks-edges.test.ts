// Outbound webhook requests at the edges: what an admin (or a receiver) can make the server do, and what an admin who
// turns an endpoint off, or a slow receiver, does to the rest.
import dns from "node:dns";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { storeOf } from "@/lib/db/kysely";
import { stopListeners } from "@/lib/db/listener";
import { runAfterCommitLoop } from "@/lib/runtime/after-commit";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import {
  createWebhookEndpoint,
  parseEndpointUrl,
  sendTestWebhook,
  setWebhookEndpointEnabled,
  webhookDeliveryLog,
} from "@/lib/settings/webhooks";
import { deliverDueWebhooks, sendOnce } from "@/lib/webhooks/deliver";
import { fanOutWebhookEvents } from "@/lib/webhooks/outbox";
import { createHarness, type Harness } from "./runtime-harness";

interface Rx {
  url: string;
  received: Array<{ id: string; type: string }>;
  /** Called for each request before it is answered; answer when it resolves. */
  hold: (() => Promise<void>) | null;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Rx> {
  const rx: Rx = {
    url: "",
    received: [],
    hold: null,
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { type: string };
      rx.received.push({ id: String(req.headers["webhook-id"]), type: body.type });
      if (rx.hold) await rx.hold();
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  rx.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  rx.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return rx;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let h: Harness;
let receivers: Rx[];
const privateTargets = process.env.SUPPORT_WEBHOOK_PRIVATE_TARGETS;
beforeEach(async () => {
  h = await createHarness();
  receivers = [];
});
afterEach(async () => {
  process.env.SUPPORT_WEBHOOK_PRIVATE_TARGETS = privateTargets;
  vi.restoreAllMocks();
  for (const r of receivers) await r.close();
  await h.close();
});
async function receiver() {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}
const admin = () => ({ tenantId: h.acme.id, staffId: h.staff.ada.id });

describe("turning an endpoint off", () => {
  it("disabling an endpoint while a worker is sending its queue stops the sending: the queued deliveries wait", async () => {
    // An admin sees a receiver misbehave (it acts on every event twice, say) and turns the endpoint off. The setting
    // says "Off: no new events are queued for it; queued ones wait" and the README "A disabled endpoint is sent
    // nothing new" — but a worker already serving the endpoint goes on sending its whole queue (up to 50 per claim).
    const rx = await receiver();
    const { endpoint } = await createWebhookEndpoint(h.db, admin(), { url: rx.url, eventTypes: ["run.completed"] });
    for (let i = 0; i < 4; i++) await sendTestWebhook(h.db, admin(), endpoint.id);
    const db = storeOf(h.db);
    expect(await fanOutWebhookEvents(db)).toMatchObject({ deliveries: 4 });

    let disabled = false;
    const pass = await deliverDueWebhooks(db, {
      workerId: "w1",
      afterSend: async () => {
        // The admin's click lands right after the first delivery went out (and committed before the next one).
        if (!disabled) {
          disabled = true;
          await setWebhookEndpointEnabled(h.db, admin(), endpoint.id, false);
        }
      },
    });
    expect((await h.db.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } })).enabled).toBe(false);
    // Only the delivery already on the wire when the admin turned it off went out; the other three wait.
    expect({ sentAfterDisable: rx.received.length - 1, passAttempts: pass.attempts }).toEqual({ sentAfterDisable: 0, passAttempts: 1 });
    const log = await webhookDeliveryLog(h.db, admin(), endpoint.id);
    expect(log.deliveries.filter((d) => d.status === "pending")).toHaveLength(3);
  });
});

describe("deleting an endpoint mid-delivery ", () => {
  it("an endpoint deleted after its first delivery went out is sent nothing more", async () => {
    const rx = await receiver();
    const { endpoint } = await createWebhookEndpoint(h.db, admin(), { url: rx.url, eventTypes: ["run.completed"] });
    for (let i = 0; i < 3; i++) await sendTestWebhook(h.db, admin(), endpoint.id);
    const db = storeOf(h.db);
    await fanOutWebhookEvents(db);
    let deleted = false;
    await deliverDueWebhooks(db, {
      workerId: "w1",
      afterSend: async () => {
        if (!deleted) {
          deleted = true;
          await h.db.webhookEndpoint.delete({ where: { id: endpoint.id } });
        }
      },
    });
    expect(rx.received).toHaveLength(1);
  });
});

describe("a receiver that never finishes ", () => {
  it("a 200 whose body never ends, and a connection never answered, each end at the timeout", async () => {
    const server: Server = createServer((req, res) => {
      req.resume();
      if (req.url === "/silent") return; // never answers
      res.writeHead(200, { "content-type": "text/plain" });
      const t = setInterval(() => res.write("x".repeat(64 * 1024)), 5);
      res.on("close", () => clearInterval(t));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const [stream, silent] = await Promise.all([
        sendOnce(`${base}/stream`, { "content-type": "application/json" }, "{}", 1_500),
        sendOnce(`${base}/silent`, { "content-type": "application/json" }, "{}", 1_500),
      ]);
      expect(stream).toMatchObject({ statusCode: null, error: "no answer within 1500 ms" });
      expect(silent).toMatchObject({ statusCode: null, error: "no answer within 1500 ms" });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("redirects ", () => {
  it("a public receiver answering 307 to a loopback address is not followed: a failed attempt, nothing reaches the target", async () => {
    const target = await receiver();
    const server: Server = createServer((req, res) => {
      req.resume();
      res.writeHead(307, { location: target.url });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const result = await sendOnce(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, {}, "{}", 2_000);
      expect(result).toMatchObject({ statusCode: 307, error: "HTTP 307" });
      expect(target.received).toHaveLength(0);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe("a slow receiver", () => {
  /**
   * Acme's endpoint gets a test event through the worker's after-commit loop; its receiver holds that request for
   * `holdMs` at most (then answers 204). Meanwhile globex sends a test event to its own endpoint and changes a setting
   * (an audit record). Returns whether, while acme's request was still held (30 s at most), globex's event was
   * delivered and its audit record sealed.
   */
  async function scenario(holdMs: number) {
    const slow = await receiver();
    const other = await receiver();
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    const gina = await h.db.staffUser.create({ data: { tenantId: globex.id, email: "gina@globex.test", name: "Gina", role: "admin" } });
    const globexAdmin = { tenantId: globex.id, staffId: gina.id };
    const slowEp = await createWebhookEndpoint(h.db, admin(), { url: slow.url, eventTypes: ["run.completed"] });
    const otherEp = await createWebhookEndpoint(h.db, globexAdmin, { url: other.url, eventTypes: ["run.completed"] });

    let released = false;
    slow.hold = async () => {
      const until = Date.now() + holdMs; // held until the test has looked (or `holdMs`), inside the receiver's timeout
      while (!released && Date.now() < until) await sleep(25);
    };
    const deps: RuntimeDeps = { ...h.deps, databaseUrl: h.tdb.url, workerId: "probe-after-commit" };
    const stop = new AbortController();
    // The receiver's timeout is longer than the hold: the slow request is not given up on while the test looks.
    const loop = runAfterCommitLoop(deps, { signal: stop.signal, delivery: { timeoutMs: 60_000 } });
    try {
      await sendTestWebhook(h.db, admin(), slowEp.endpoint.id);
      const deadline = Date.now() + 20_000;
      while (slow.received.length === 0) {
        if (Date.now() > deadline) throw new Error("the slow receiver never got its request");
        await sleep(25);
      }
      const heldSince = Date.now();
      await sendTestWebhook(h.db, globexAdmin, otherEp.endpoint.id);
      await setWebhookEndpointEnabled(h.db, globexAdmin, otherEp.endpoint.id, true);
      const unsealed = () => h.db.auditEvent.count({ where: { tenantId: globex.id, seq: null } });
      let seen = { otherShopDelivered: false, auditSealed: false };
      while (Date.now() - heldSince < Math.min(30_000, holdMs ? holdMs - 500 : 30_000)) {
        seen = { otherShopDelivered: other.received.length > 0, auditSealed: (await unsealed()) === 0 };
        if (seen.otherShopDelivered && seen.auditSealed) break;
        await sleep(50);
      }
      return seen;
    } finally {
      released = true;
      stop.abort();
      await loop;
      await stopListeners();
    }
  }

  it("(control) with a receiver that answers at once, another shop's webhook goes out and the audit is sealed promptly", async () => {
    expect(await scenario(0)).toEqual({ otherShopDelivered: true, auditSealed: true });
  });

  it("one shop's receiver taking its time does not hold up audit sealing or another shop's webhooks", async () => {
    // README: audit records are sealed "within a second while a worker runs"; an endpoint's deliveries are its own.
    // The worker's after-commit pass sealed, fanned out and then AWAITED every claimed endpoint's sending before the
    // next pass: a receiver that answers just inside its timeout (with 50 queued events a pass was up to 50 × 10 s)
    // kept every shop's audit sealing and every other endpoint's deliveries waiting.
    expect(await scenario(45_000)).toEqual({ otherShopDelivered: true, auditSealed: true });
  });
});

describe("the delivery log and private targets", () => {
  it("a refused delivery does not tell the shop's admin what the operator's internal DNS resolves a name to", async () => {
    // A shop admin (a customer of the operator, not the operator) enters an internal name; the delivery is refused
    // — good — but the delivery log says which private address the name has on the operator's network, turning the
    // endpoint into an oracle of the operator's internal DNS (name by name: exists or not, and at which address).
    process.env.SUPPORT_WEBHOOK_PRIVATE_TARGETS = "deny";
    const realLookup = dns.lookup;
    vi.spyOn(dns, "lookup").mockImplementation(((hostname: string, options: unknown, callback: unknown) => {
      if (hostname === "billing-db.corp.example.com") {
        (callback as (e: null, a: dns.LookupAddress[]) => void)(null, [{ address: "10.20.30.40", family: 4 }]);
        return {} as never;
      }
      return (realLookup as unknown as (...a: unknown[]) => unknown)(hostname, options, callback) as never;
    }) as unknown as typeof dns.lookup);
    const rx = await receiver();
    void rx;
    const { endpoint } = await createWebhookEndpoint(h.db, admin(), {
      url: "http://billing-db.corp.example.com:5432/",
      eventTypes: ["run.completed"],
    });
    await sendTestWebhook(h.db, admin(), endpoint.id);
    const db = storeOf(h.db);
    await fanOutWebhookEvents(db);
    await deliverDueWebhooks(db, { workerId: "w1", baseDelayMs: 60_000 });
    const log = await webhookDeliveryLog(h.db, admin(), endpoint.id);
    const error = log.deliveries[0]!.attemptLog[0]!.error!;
    expect(error).toMatch(/not a public address/);
    expect(error).not.toContain("10.20.30.40");
  });

  it("a name that resolves to loopback among public addresses is refused at connection, nothing is sent", async () => {
    // Held (kept as evidence): DNS rebinding / mixed answers gain nothing — every address is checked as connecting.
    process.env.SUPPORT_WEBHOOK_PRIVATE_TARGETS = "deny";
    const rx = await receiver();
    const port = new URL(rx.url).port;
    vi.spyOn(dns, "lookup").mockImplementation(((_h: string, _o: unknown, callback: unknown) => {
      (callback as (e: null, a: dns.LookupAddress[]) => void)(null, [
        { address: "::ffff:127.0.0.1", family: 6 },
        { address: "127.0.0.1", family: 4 },
      ]);
      return {} as never;
    }) as unknown as typeof dns.lookup);
    const result = await sendOnce(`http://rebind.example.com:${port}/hooks`, { "content-type": "application/json" }, "{}", 3_000);
    expect(result.error).toMatch(/^refused: .* not a public address/);
    expect(rx.received).toHaveLength(0);
  });

  it.each(["http://localhost./hooks", "http://hooks.localhost./hooks", "http://LOCALHOST.:8080/hooks"])(
    "%s (localhost written with its trailing root dot) is refused when the endpoint is added",
    (url) => {
      // README: "a URL that names one is refused when it is added". `localhost.` is the same name, fully qualified;
      // refusedHost compares the host text with "localhost" and ".localhost" only.
      process.env.SUPPORT_WEBHOOK_PRIVATE_TARGETS = "deny";
      expect(() => parseEndpointUrl(url)).toThrow(expect.objectContaining({ code: "INVALID_INPUT" }));
    },
  );
});
