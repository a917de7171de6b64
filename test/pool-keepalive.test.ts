import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import pg from "pg";
import { listen, stopListeners } from "@/lib/db/listener";
import { createPool } from "@/lib/db/sql";
import { createTestDatabase, type TestDatabase } from "./db";

// A connection whose host vanished (no reset, no close) is found by TCP keepalive. With pg's `keepAlive: true` alone
// the probes start after the kernel's default idle time — two hours on Linux (`ss -o` showed `keepalive,119min`); the
// pool asks for them after 10 s of silence.
let db: TestDatabase | null = null;
afterEach(async () => {
  vi.restoreAllMocks();
  await db?.drop();
  db = null;
});

describe("the pool's connections", () => {
  it("ask for keepalive probes after 10 s of silence, not the kernel's two hours", async () => {
    db = await createTestDatabase({ seed: false });
    const asked: Array<[boolean | undefined, number | undefined]> = [];
    const setKeepAlive = net.Socket.prototype.setKeepAlive;
    vi.spyOn(net.Socket.prototype, "setKeepAlive").mockImplementation(function (this: net.Socket, enable, delay) {
      asked.push([enable, delay]);
      return setKeepAlive.call(this, enable, delay);
    });
    const pool = createPool(db.url, { max: 1 });
    try {
      await pool.query("SELECT 1");
    } finally {
      await pool.end();
    }
    expect(asked).toEqual([[true, 10_000]]);
  });

  it("and the listener's: the server is asked to probe a silent client after 10 s, 3 times 5 s apart", async () => {
    db = await createTestDatabase({ seed: false });
    const options: Array<string | undefined> = [];
    const connect = pg.Client.prototype.connect;
    vi.spyOn(pg.Client.prototype, "connect").mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      options.push((this as unknown as { connectionParameters: { options?: string } }).connectionParameters.options);
      return (connect as unknown as (...a: unknown[]) => Promise<pg.Client>).apply(this, args);
    });
    try {
      await listen(db.url, "support_runs", () => undefined);
    } finally {
      await stopListeners();
    }
    expect(options).toEqual(["-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"]);
  });
});
