import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listen, stopListeners } from "@/lib/db/listener";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { type SilentProxy, silentProxy } from "./silent-proxy";

// A listening connection can go silent without closing: the database's host vanishes, a NAT or a load balancer
// forgets an idle connection, a network partition. No "end" ever comes, and without a check the process would hear
// nothing more — every open widget and console at rest would wait out its heartbeat, and see a change only when its
// stream reopens. The listener checks its connection; when it stops answering, it drops it and listens on a new one,
// and tells subscribers to read again (what was sent meanwhile was not heard).

let db: TestDatabase;
let proxy: SilentProxy;

beforeAll(async () => {
  db = await createTestDatabase({ seed: false });
  proxy = await silentProxy(new URL(db.url));
});
afterAll(async () => {
  await stopListeners();
  await proxy?.close();
  await db?.drop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: string, ok: () => boolean, ms: number) {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(20);
  }
}
async function notify(payload: string) {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  await client.query("SELECT pg_notify('support_runs', $1)", [payload]);
  await client.end();
}

describe("a listening connection that goes silent without closing", () => {
  it("is noticed, dropped and replaced; subscribers are told to read again, and what is sent next is heard", async () => {
    const heard: string[] = [];
    let reconnects = 0;
    await listen(
      proxy.url,
      "support_runs",
      (payload) => heard.push(payload),
      () => reconnects++,
      { checkEveryMs: 200, checkTimeoutMs: 300 },
    );
    await notify("before");
    await until("the first notification heard", () => heard.includes("before"), 3000);
    // Checks that pass change nothing.
    await sleep(600);
    expect(reconnects).toBe(0);

    proxy.silence(); // the connection stays open, and nothing passes either way
    await notify("while silent");
    await until("the listener reconnected", () => reconnects === 1, 3000);
    expect(proxy.connections()).toBe(2); // a new connection, through the same (now healthy) path

    await notify("after");
    await until("the notification after the reconnect heard", () => heard.includes("after"), 3000);
    expect(heard).toEqual(["before", "after"]); // what was sent while silent is lost — hence the re-read
    await sleep(600);
    expect(reconnects).toBe(1);
  });
});
