import net from "node:net";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { noteDatabaseReachable, setDatabaseLogger } from "@/lib/db/outage";
import { AppError } from "@/lib/errors";
import { sendLogsTo } from "@/lib/log";
import { COMPRESS_FROM_CHARS, errorResponse, json } from "./http";

// What the process's logger writes (JSON lines), captured.
let logLines: Array<{ msg: string; level: string; err?: { message: string; stack?: string } }> = [];
let restoreLogs: () => void;
beforeEach(() => {
  logLines = [];
  restoreLogs = sendLogsTo({ write: (line: string) => logLines.push(JSON.parse(line)) });
});
afterEach(() => {
  restoreLogs();
  noteDatabaseReachable(); // end any outage a test started
});

async function refusedConnection(): Promise<unknown> {
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  return new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/x` }).connect().then(
    () => null,
    (err: unknown) => err,
  );
}

describe("errorResponse", () => {
  it("answers 503 while the database is unreachable, logging the outage once instead of a stack per request", async () => {
    const lines: string[] = [];
    const restore = setDatabaseLogger((_level, line) => lines.push(line));
    try {
      const err = await refusedConnection();
      for (let i = 0; i < 30; i++) {
        const res = errorResponse(err, "live updates");
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({ code: "UNAVAILABLE", message: expect.stringMatching(/try again/i) });
      }
      expect(lines).toEqual([expect.stringContaining("database unavailable (ECONNREFUSED)")]);
      expect(logLines).toEqual([]); // no stack per request
    } finally {
      setDatabaseLogger(restore);
    }
  });

  it("keeps the status of an AppError, and logs other errors as a 500 without their details", async () => {
    const notFound = errorResponse(new AppError("NOT_FOUND", "This conversation was not found."), "conversation view");
    expect(notFound.status).toBe(404);
    expect(await notFound.json()).toEqual({ code: "NOT_FOUND", message: "This conversation was not found." });
    expect(logLines).toEqual([]);
    const bug = errorResponse(new Error("secret detail"), "send message");
    expect(bug.status).toBe(500);
    expect(JSON.stringify(await bug.json())).not.toContain("secret detail");
    expect(logLines.map((l) => [l.level, l.msg, l.err?.message])).toEqual([["error", "widget request failed", "secret detail"]]);
  });
});

describe("json", () => {
  it("asks that a short answer go out as it is (no gzip) and leaves a long one to be compressed", async () => {
    const short = json({ ok: true }, 202);
    expect(short.status).toBe(202);
    expect(short.headers.get("content-type")).toBe("application/json");
    expect(short.headers.get("cache-control")).toBe("no-store, no-transform");
    expect(await short.json()).toEqual({ ok: true });
    const text = "x".repeat(COMPRESS_FROM_CHARS);
    const long = json({ text });
    expect(long.headers.get("cache-control")).toBe("no-store");
    expect(long.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await long.json()).toEqual({ text });
  });
});
