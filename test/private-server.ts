// An embedded PostgreSQL of a test's own (its own data folder, port and supervisor in this process), for
// tests that kill or stop the server: the shared one every other test file uses is never touched.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { createPrisma, type PrismaClient } from "@/lib/db/client";
import { applyMigrations } from "@/lib/db/migrate";
import { seedDemo } from "@/lib/setup/seed";
import { type EmbeddedServerHandle, startEmbeddedServer, withEmbeddedLock } from "@/lib/db/server";
import { allProcesses } from "@/scripts/proc";

export interface PrivateServer {
  server: EmbeddedServerHandle;
  /** the migrated (and, if asked, seeded) `support` database on it */
  url: string;
  /** SIGKILLs the postmaster; returns its pid */
  kill(): number;
  /**
   * Kills the postmaster and keeps it down while `during` runs (holding the cluster's lock, so the supervisor
   * cannot restart it yet), then lets the supervisor restart it and waits until it answers again.
   */
  killAndHoldDown<T>(during: () => Promise<T>): Promise<T>;
  /** Waits until the supervisor has restarted the server after `deadPid` died, and it answers. */
  waitForRestart(deadPid: number, timeoutMs?: number): Promise<void>;
  destroy(): Promise<void>;
}

export async function startPrivateServer(opts: { seed?: boolean } = {}): Promise<PrivateServer> {
  const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), "support-pg-test-"));
  // Enterable by the postgres user (when root), so the cluster stays in this folder and leaves nothing behind
  // elsewhere (the private-folder case has a test of its own: embedded-root-private-folder.test.ts).
  fs.chmodSync(dataRoot, 0o755);
  const server = await startEmbeddedServer(dataRoot);
  await adminQuery(server.url("postgres"), "CREATE DATABASE support");
  const url = server.url("support");
  await applyMigrations(url);
  if (opts.seed !== false) {
    const prisma = createPrisma(url, { max: 1 });
    try {
      await seedDemo(prisma);
    } finally {
      await prisma.$disconnect();
    }
  }

  let orphans: number[] = [];
  const kill = () => {
    const pid = server.record()!.pid;
    orphans = childrenOf(pid);
    process.kill(pid, "SIGKILL");
    return pid;
  };
  const waitForRestart = async (deadPid: number, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const rec = server.record();
      if (rec && rec.pid !== deadPid && (await answers(server.url("postgres")))) return;
      if (Date.now() > deadline) throw new Error(`the embedded PostgreSQL was not restarted within ${timeoutMs} ms`);
      await sleep(50);
    }
  };
  return {
    server,
    url,
    kill,
    waitForRestart,
    async killAndHoldDown(during) {
      let deadPid = 0;
      const result = await withEmbeddedLock(dataRoot, async () => {
        deadPid = kill();
        // Down for sure: new connections are refused, and the backends it had forked are gone. They exit by
        // themselves once they notice their postmaster died, but not at once: until then a pooled connection
        // to one of them still answers queries.
        while (await answers(server.url("postgres"))) await sleep(20);
        const deadline = Date.now() + 10_000;
        while (orphans.some(isAlive)) {
          if (Date.now() > deadline) throw new Error(`backends of the killed postmaster still run: ${orphans.filter(isAlive)}`);
          await sleep(20);
        }
        return during();
      });
      await waitForRestart(deadPid);
      return result;
    },
    destroy: () => server.destroy(),
  };
}

/** The pids whose parent is `pid` (Linux: /proc/<pid>/stat's fourth field). */
function childrenOf(pid: number): number[] {
  return allProcesses()
    .filter((p) => p.ppid === pid)
    .map((p) => p.pid);
}

/** Running (a zombie no one reaps counts as gone: it holds no connection). */
function isAlive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
  } catch {
    return false;
  }
}

export async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export type { PrismaClient };
