// The pg pool every PrismaClient runs on (lib/db/client), shared with the runtime's typed SQL (lib/db/kysely):
// timestamps read and written as UTC whatever the process's time zone, int8 as bigint (as Prisma returns them).
import pg from "pg";
import { connectivityFailureKind, logDatabaseEvent, noteDatabaseReachable } from "./outage";
import type { PrismaClient } from "./prisma-types";
import { setting } from "@/lib/env";

// Columns are `timestamp(3)` holding UTC (as Prisma writes them); pg would read them in the process's zone.
const TIMESTAMP = 1114;
const INT8 = 20;
const parsers: Record<number, (value: string) => unknown> = {
  [TIMESTAMP]: (v) => new Date(`${v.replace(" ", "T")}Z`),
  [INT8]: (v) => BigInt(v),
};
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    (format ?? "text") === "text" && parsers[oid]
      ? parsers[oid]
      : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

export interface PoolOptions {
  /** connections at most (pg's default: 10) */
  max?: number;
  /**
   * How long a query may wait for the database's answer (ms; 0: no bound). Default: SUPPORT_DB_ANSWER_MS (30 s).
   * Past it the query's connection is closed (see `clientAnsweringWithin`).
   */
  answerWithinMs?: number;
  /**
   * How long the server lets one of the pool's sessions sit idle inside a transaction before it ends the session
   * (ms). Default: SUPPORT_TOOL_TIMEOUT_MS + 30 s (see `serverSideBounds`).
   */
  idleInTransactionMs?: number;
}

/**
 * The pool a PrismaClient runs on; sessions use UTC so `now()` compares with the UTC-naive columns. It outlives
 * database restarts: connections the server dropped are discarded and new ones opened on demand, a connection
 * attempt gives up after 5 s (a hung server fails requests instead of piling them up), and TCP keepalive finds
 * connections a vanished host left half-open: its probes start after 10 s of silence (the kernel's default is two
 * hours), and the kernel gives up when they go unanswered (Linux's default: 9 probes 75 s apart, about 11 minutes).
 * A query that waits longer than `answerWithinMs` for its answer is not left to keepalive: its connection is closed.
 * The first connection after an outage ends it (lib/db/outage).
 */
export function createPool(connectionString: string, options: PoolOptions = {}): pg.Pool {
  const answerWithinMs = options.answerWithinMs ?? setting("SUPPORT_DB_ANSWER_MS");
  const pool = new pg.Pool({
    connectionString,
    options: `-c TimeZone=UTC ${serverSideBounds(options.idleInTransactionMs ?? setting("SUPPORT_TOOL_TIMEOUT_MS") + 30_000)}`,
    types,
    connectionTimeoutMillis: 5_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(answerWithinMs > 0 ? { Client: clientAnsweringWithin(answerWithinMs) } : {}),
    ...(options.max ? { max: options.max } : {}),
  });
  // An idle connection the server closed (a restart) must not take the process down; the pool replaces it. It is
  // no failed request either: if the database is really gone, the next request notes the outage.
  pool.on("error", (err) => {
    if (!connectivityFailureKind(err)) logDatabaseEvent("warn", "idle database connection lost", { err });
  });
  pool.on("connect", (client) => {
    noteDatabaseReachable();
    // A connection the server resets while it is checked out (between two queries of a transaction) emits "error"
    // with no pool listener attached: never an uncaught exception — the query in hand fails and the pool drops it.
    client.on("error", () => undefined);
  });
  return pool;
}

/** The server-side keepalives of `serverSideBounds`, as startup options (the listener's connection asks for them too). */
export const SERVER_KEEPALIVES = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3";

/**
 * What the server is asked to bound for each session, for a client whose host vanishes (a worker's VM dies, a
 * partition) — the server is never told, and without these it keeps the session, and the row locks of its open
 * transaction, until its own TCP keepalive gives up (two hours and more by default). A run whose row such a
 * transaction locked could not be claimed meanwhile (claims skip locked rows), whatever its lease said.
 * - `idle_in_transaction_session_timeout`: a transaction no statement came for within `idleInTransactionMs` is ended
 *   with its session (rolled back, its locks released). The product leaves a transaction idle at most while a tool's
 *   body runs inside its effect's transaction (SUPPORT_TOOL_TIMEOUT_MS), hence the default of that plus 30 s.
 * - `tcp_keepalives_*`: the server probes a silent client after 10 s, then every 5 s, and drops it after 3 unanswered
 *   probes (about 25 s) — an idle session of a vanished client, in a transaction or not, no longer holds a slot.
 */
function serverSideBounds(idleInTransactionMs: number): string {
  return `-c idle_in_transaction_session_timeout=${Math.round(idleInTransactionMs)} ${SERVER_KEEPALIVES}`;
}

type QueryCallback = (err: Error | null, result?: unknown) => void;

/**
 * A pg client whose queries must be answered within `ms`. A database that stops answering without closing the
 * connection (its host vanished, a partition, a frozen server) otherwise leaves a query — and the request, worker
 * pass or run waiting on it — waiting until TCP gives up, which can take many minutes. Past `ms` the connection is
 * closed: every query on it fails with "the database did not answer within …" (a connectivity failure, lib/db/outage:
 * told once, answered 503, a run let go), the pool drops it (a closed client is never handed out again), and the
 * server rolls back whatever transaction was open on it — at once if the close reaches it, else when the session's
 * bounds end it (`serverSideBounds`). A query waiting on a row lock is waiting for an answer too: the product holds
 * none longer than a tool's body runs (SUPPORT_TOOL_TIMEOUT_MS, 15 s), under the default bound of 30 s. pg's own
 * `query_timeout` is not used: it fails the query but leaves the connection waiting for the lost answer, and the pool
 * hands it out again in that state.
 */
function clientAnsweringWithin(ms: number): typeof pg.Client {
  return class ClientAnsweringWithin extends pg.Client {
    /** Set once the database left a query unanswered: every later query (a ROLLBACK after it) fails with it too. */
    private unanswered: Error | null = null;

    // pg's `query` has many overloads; this bounds the two forms the product's drivers use (promise and callback).
    override query(config: any, values?: any, callback?: any): any {
      if (typeof config?.submit === "function") return super.query(config, values, callback); // a cursor: unbounded
      const cb: QueryCallback | undefined = typeof values === "function" ? values : callback;
      const unanswered = this.unanswered;
      if (unanswered) {
        if (!cb) return Promise.reject(unanswered);
        process.nextTick(() => cb(unanswered));
        return undefined;
      }
      const timer = setTimeout(() => this.notAnswered(), ms);
      const done = () => clearTimeout(timer);
      if (cb) {
        const answered: QueryCallback = (err, result) => {
          done();
          cb(err, result);
        };
        return typeof values === "function" ? super.query(config, answered) : super.query(config, values, answered);
      }
      const result: Promise<unknown> = super.query(config, values);
      result.then(done, done);
      return result;
    }

    private notAnswered() {
      this.unanswered = new Error(`the database did not answer within ${ms / 1000} s; the connection was closed`);
      const stream = (this as unknown as { connection?: { stream?: { destroy(err?: Error): void } } }).connection?.stream;
      stream?.destroy(this.unanswered);
    }
  };
}

// On globalThis for the same reason as lib/db/kysely.ts's stores: one map per process, whatever module copy asks.
const pools: WeakMap<object, pg.Pool> = ((globalThis as { __supportPools?: WeakMap<object, pg.Pool> }).__supportPools ??= new WeakMap());

/** Remembers the pool under a client (lib/db/client), for code that needs the pool itself. */
export function registerPool(client: PrismaClient, pool: pg.Pool): void {
  pools.set(client, pool);
}

/** The pg pool under a PrismaClient made by `createPrisma`. */
export function poolOf(client: PrismaClient): pg.Pool | undefined {
  return pools.get(client);
}
