// Supervision of the embedded PostgreSQL and reconnection of the processes using it, on servers of this file's
// own (test/private-server.ts): a killed postmaster comes back on the same port by itself, a process whose
// owner died takes over, and the health route and the process-wide client recover without a restart — on the
// embedded server and through DATABASE_URL.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GET as health } from "@/app/api/health/route";
import { createPrisma, disconnectPrisma, getPrisma } from "@/lib/db/client";
import { setDatabaseLogger } from "@/lib/db/outage";
import { type EmbeddedRecord, startEmbeddedServer } from "@/lib/db/server";
import { answers, type PrivateServer, sleep, startPrivateServer } from "./private-server";

const root = path.resolve(import.meta.dirname, "..");
const logged: string[] = [];
let restoreLogger: ReturnType<typeof setDatabaseLogger>;
beforeAll(() => {
  restoreLogger = setDatabaseLogger((_level, line) => logged.push(line));
});
afterAll(() => {
  setDatabaseLogger(restoreLogger);
});

describe("a killed postmaster", () => {
  let pgs: PrivateServer;
  beforeAll(async () => {
    pgs = await startPrivateServer({ seed: false });
  }, 120_000);
  afterAll(async () => {
    await pgs?.destroy();
  });

  it("is restarted by its owner on the same data folder and port, and an existing pool reconnects by itself", async () => {
    const prisma = createPrisma(pgs.url, { max: 3 });
    try {
      const before = pgs.server.record()!;
      expect(before.ownerPid).toBe(process.pid);
      await prisma.$executeRawUnsafe(`CREATE TABLE survivor (note text)`);
      await prisma.$executeRawUnsafe(`INSERT INTO survivor VALUES ('committed before the kill')`);

      const started = Date.now();
      const dead = pgs.kill();
      await pgs.waitForRestart(dead);
      expect(Date.now() - started).toBeLessThan(10_000);

      const after = pgs.server.record()!;
      expect(after.pid).not.toBe(dead);
      expect(after.port).toBe(before.port);
      expect(after.dataDir).toBe(before.dataDir);
      expect(after.restarts).toBe(1);
      // The same client, never recreated: its pool dropped the dead connections and opened new ones.
      const rows = await prisma.$queryRawUnsafe<Array<{ note: string }>>(`SELECT note FROM survivor`);
      expect(rows).toEqual([{ note: "committed before the kill" }]);
      expect(logged.filter((l) => l.includes(`(pid ${dead}) was down; restarted`))).toHaveLength(1);
    } finally {
      await prisma.$disconnect();
    }
  });
});

describe("an owner that dies", () => {
  let dataRoot: string;
  let child: ReturnType<typeof spawn> | undefined;
  afterEach(async () => {
    child?.kill("SIGKILL");
  });

  it("is replaced by a process still using the server, which then restarts the postmaster when it dies", async () => {
    dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), "support-pg-test-"));
    fs.chmodSync(dataRoot, 0o755); // cluster in place (see test/private-server.ts)
    child = spawn(path.join(root, "node_modules", ".bin", "tsx"), [path.join(root, "test", "fixtures", "embedded-owner.ts"), dataRoot], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const started = JSON.parse(await firstLine(child.stdout!)) as EmbeddedRecord;
    const server = await startEmbeddedServer(dataRoot); // this process joins as a user
    try {
      expect(server.record()).toMatchObject({ ownerPid: started.ownerPid, users: [process.pid], pid: started.pid });

      process.kill(started.ownerPid!, "SIGKILL"); // the owner dies; the postmaster (its own session) lives on
      await until(() => server.record()?.ownerPid === process.pid, "this process to adopt the server");
      expect(server.record()!.pid).toBe(started.pid);
      expect(await answers(server.url())).toBe(true);

      process.kill(started.pid, "SIGKILL");
      await until(async () => server.record()!.pid !== started.pid && (await answers(server.url())), "the new owner to restart it");
      expect(server.record()).toMatchObject({ ownerPid: process.pid, port: started.port, restarts: 1 });
      expect(logged.some((l) => l.includes(`pid ${process.pid} now supervises the embedded PostgreSQL`))).toBe(true);
    } finally {
      await server.destroy();
    }
    // Stopped by its last user, and its data deleted.
    expect(fs.existsSync(dataRoot)).toBe(false);
  }, 120_000);
});

describe("another embedded server starting while one is down", () => {
  it("does not get its port (the supervisor holds it), and could not serve that server's clients anyway", async () => {
    const a = await startPrivateServer({ seed: false });
    const otherRoot = fs.mkdtempSync(path.join(os.tmpdir(), "support-pg-test-"));
    fs.chmodSync(otherRoot, 0o755);
    let b: Awaited<ReturnType<typeof startEmbeddedServer>> | undefined;
    try {
      const port = a.server.port();
      await a.killAndHoldDown(async () => {
        await until(async () => !(await portIsFree(port)), "the supervisor to hold the port");
        b = await startEmbeddedServer(otherRoot, { port }); // asks for exactly that port
        expect(b.port()).not.toBe(port);
      });
      expect(a.server.port()).toBe(port); // restarted where its clients expect it
      expect(await answers(a.url)).toBe(true);

      // Had b got the port, a's clients would have been refused there, not served b's data.
      const onB = new URL(a.url);
      onB.port = String(b!.port());
      const client = new pg.Client({ connectionString: onB.toString() });
      const refused = await client.connect().then(
        () => null,
        (err: unknown) => err as { code?: string; message: string },
      );
      await client.end().catch(() => {});
      expect(refused?.code).toBe("28000");
      expect(refused?.message).toMatch(/role "support_[0-9a-f]{12}" does not exist/);
    } finally {
      await b?.destroy();
      await a.destroy();
    }
  }, 120_000);
});

describe("health and the process-wide client while the database is down", () => {
  let pgs: PrivateServer;
  const savedUrl = process.env.DATABASE_URL;
  beforeAll(async () => {
    pgs = await startPrivateServer();
    process.env.DATABASE_URL = pgs.url; // the process-wide client (getPrisma) and the health route use it
  }, 120_000);
  afterAll(async () => {
    await disconnectPrisma();
    if (savedUrl === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = savedUrl;
    await pgs?.destroy();
  });

  it("says 503 within half a second of a kill, 200 again once the supervisor restarted it, and logs the outage once", async () => {
    const client = await getPrisma();
    expect((await health()).status).toBe(200);
    logged.length = 0;
    const timings = await pgs.killAndHoldDown(async () => {
      const t0 = Date.now();
      const first = await health();
      const firstMs = Date.now() - t0;
      for (let i = 0; i < 20; i++) expect((await health()).status).toBe(503);
      return { first, firstMs };
    });
    expect(timings.first.status).toBe(503);
    expect(await timings.first.json()).toEqual({ ok: false, database: "unavailable" });
    expect(timings.firstMs).toBeLessThan(500);
    const back = await health();
    expect(back.status).toBe(200);
    expect(await getPrisma()).toBe(client); // no new client: the pool reconnected
    // One line per kind of failure, one line for the restart, one summary — not one per request.
    const down = logged.filter((l) => l.includes("database unavailable"));
    expect(down.length).toBeGreaterThanOrEqual(1);
    expect(new Set(down).size).toBe(down.length);
    expect(down.length).toBeLessThanOrEqual(3);
    const summary = logged.filter((l) => l.includes("database back after"));
    expect(summary).toHaveLength(1);
    expect(summary[0]).toMatch(/database back after \d+\.\d s; 21 requests failed meanwhile \(health 21\)/);
  }, 60_000);

  it("DATABASE_URL: a server stopped and started again (no supervisor involved) is found again by the same client", async () => {
    const client = await getPrisma();
    expect((await health()).status).toBe(200);
    const port = pgs.server.port();
    await pgs.server.stop(); // a clean stop, as an operator restarting the server would
    expect(await answers(pgs.url)).toBe(false);
    expect((await health()).status).toBe(503);
    await sleep(300);
    expect((await health()).status).toBe(503); // nobody restarts a server this process does not supervise
    const again = await startEmbeddedServer(pgs.server.dataRoot, { port });
    expect(again.port()).toBe(port);
    expect((await health()).status).toBe(200);
    expect(await getPrisma()).toBe(client);
  }, 60_000);
});

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen({ port, host: "127.0.0.1", exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

function firstLine(stream: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = "";
    stream.on("data", (d: Buffer) => {
      buf += d.toString();
      const nl = buf.indexOf("\n");
      if (nl >= 0) resolve(buf.slice(0, nl));
    });
    stream.on("end", () => reject(new Error(`the owner process exited before reporting: ${buf}`)));
  });
}
