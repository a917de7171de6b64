import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
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
});
