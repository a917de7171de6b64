// The pg pool every PrismaClient runs on (lib/db/client), shared with the runtime's typed SQL (lib/db/kysely):
// timestamps read and written as UTC whatever the process's time zone, int8 as bigint (as Prisma returns them).
import pg from "pg";
import { connectivityFailureKind, logDatabaseEvent, noteDatabaseReachable } from "./outage";
import type { PrismaClient } from "./prisma-types";

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

/**
 * The pool a PrismaClient runs on; sessions use UTC so `now()` compares with the UTC-naive columns. It outlives
 * database restarts: connections the server dropped are discarded and new ones opened on demand, a connection
 * attempt gives up after 5 s (a hung server fails requests instead of piling them up), and TCP keepalive finds
 * connections a vanished host left half-open: its probes start after 10 s of silence (the kernel's default is two
 * hours), and the kernel gives up when they go unanswered (Linux's default: 9 probes 75 s apart, about 11 minutes).
 * The first connection after an outage ends it (lib/db/outage).
 */
export function createPool(connectionString: string, max?: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    options: "-c TimeZone=UTC",
    types,
    connectionTimeoutMillis: 5_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(max ? { max } : {}),
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
