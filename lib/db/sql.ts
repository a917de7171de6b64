// The runtime's one way to talk SQL. Its statements are `Prisma.sql` fragments; what runs them is either the pg
// pool under a PrismaClient (the hot path: through Prisma's pipeline each statement costs ≈0.3–0.8 ms more,
// measured by `npm run bench`, and a model turn needs a dozen) or a Prisma transaction a surface already holds.
//
//   const rows = await fastSql(prisma).query<Row>(Prisma.sql`SELECT …`);     // one statement, pg directly
//   await sqlTransaction(prisma, async (sql) => { … });                       // BEGIN … COMMIT on one pg client
//   await appendMessage(tx, …);                                               // a Prisma tx works as well (sqlOf)
import { createHash } from "node:crypto";
import pg from "pg";
import { Prisma, type PrismaClient, type PrismaTx } from "./prisma-types";

/** Runs `Prisma.sql` statements. Rows come back as Prisma's `$queryRaw` returns them (Dates in UTC, int8 as bigint). */
export interface Sql {
  readonly via: "pg" | "prisma";
  query<T>(statement: Prisma.Sql): Promise<T[]>;
  execute(statement: Prisma.Sql): Promise<number>;
  /** The Prisma transaction behind this runner, if it is one (for the few helpers that use Prisma's models). */
  readonly prisma?: PrismaTx;
}

/** What runtime functions accept: a runner, or a Prisma client/transaction (wrapped on use). */
export type Db = Sql | PrismaTx;

/**
 * Raised inside `runtimeTransaction` when a step needs a Prisma-only helper (opening a handoff) while running on
 * the pg fast path; the transaction is rolled back and the step runs again in a Prisma transaction.
 */
export class NeedsPrismaTransaction extends Error {
  constructor() {
    super("this step needs a Prisma transaction");
    this.name = "NeedsPrismaTransaction";
  }
}

// Columns are `timestamp(3)` holding UTC (as Prisma writes them); pg would read them in the process's zone.
const TIMESTAMP = 1114;
const INT8 = 20;
const parsers: Record<number, (value: string) => unknown> = {
  [TIMESTAMP]: (v) => new Date(`${v.replace(" ", "T")}Z`),
  [INT8]: (v) => BigInt(v),
};
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    (format ?? "text") === "text" && parsers[oid] ? parsers[oid] : pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
};

/** The pool a PrismaClient runs on; sessions use UTC so `now()` compares with the UTC-naive columns. */
export function createPool(connectionString: string, max?: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, options: "-c TimeZone=UTC", types, ...(max ? { max } : {}) });
  // An idle connection the server closed (a restart) must not take the process down; the pool replaces it.
  pool.on("error", (err) => console.error(`[db] idle connection lost: ${err.message}`));
  return pool;
}

const pools = new WeakMap<object, pg.Pool>();

/** Remembers the pool under a client so `fastSql` can reach it (see lib/db/client). */
export function registerPool(client: PrismaClient, pool: pg.Pool): void {
  pools.set(client, pool);
}

// Dates are written as UTC-naive text (like Prisma does); pg would write them in the process's zone.
function param(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (typeof v === "bigint") return v.toString();
  return v;
}

// Named statements are parsed once per connection (and their plans cached by PostgreSQL): the runtime sends
// the same few statements on every turn. The name is derived from the text, so different texts never collide.
const names = new Map<string, string>();
function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `rt_${createHash("sha1").update(text).digest("base64url").slice(0, 20)}`;
    if (names.size < 2000) names.set(text, name);
  }
  return name;
}

function onPg(conn: pg.Pool | pg.PoolClient): Sql {
  const run = (s: Prisma.Sql) => conn.query({ name: statementName(s.text), text: s.text, values: s.values.map(param) });
  return {
    via: "pg",
    async query<T>(s: Prisma.Sql) {
      return (await run(s)).rows as T[];
    },
    async execute(s: Prisma.Sql) {
      return (await run(s)).rowCount ?? 0;
    },
  };
}

function onPrisma(tx: PrismaTx): Sql {
  return {
    via: "prisma",
    prisma: tx,
    query: <T>(s: Prisma.Sql) => tx.$queryRaw<T[]>(s),
    execute: (s: Prisma.Sql) => tx.$executeRaw(s),
  };
}

function isSql(db: Db): db is Sql {
  return typeof (db as Sql).query === "function" && "via" in db;
}

/** A runner for whatever the caller holds: a runner as is, a Prisma client or transaction wrapped. */
export function sqlOf(db: Db): Sql {
  return isSql(db) ? db : onPrisma(db);
}

/** The Prisma transaction behind `db`; on the pg fast path, asks `runtimeTransaction` to redo the step in one. */
export function prismaOf(db: Db): PrismaTx {
  if (!isSql(db)) return db;
  if (db.prisma) return db.prisma;
  throw new NeedsPrismaTransaction();
}

/** Autocommit statements straight on the client's pg pool (or through Prisma for a client without one). */
export function fastSql(client: PrismaClient): Sql {
  const pool = pools.get(client);
  return pool ? onPg(pool) : onPrisma(client);
}

/** BEGIN … COMMIT on one pg connection of the client's pool; rolled back if `fn` throws. */
export async function sqlTransaction<T>(client: PrismaClient, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const pool = pools.get(client);
  if (!pool) return client.$transaction((tx) => fn(onPrisma(tx)), { timeout: 20_000 });
  const conn = await pool.connect();
  let broken: Error | undefined;
  try {
    await conn.query("BEGIN");
    const result = await fn(onPg(conn));
    await conn.query("COMMIT");
    return result;
  } catch (err) {
    await conn.query("ROLLBACK").catch((e: Error) => (broken = e));
    throw err;
  } finally {
    conn.release(broken);
  }
}

/**
 * A runtime step's transaction: on the pg fast path, unless the step needs a Prisma-only helper (`prismaOf`),
 * in which case it is rolled back and runs again, whole, in a Prisma transaction. `fn` must therefore keep its
 * effects inside the transaction (or make them idempotent) until it returns.
 */
export async function runtimeTransaction<T>(client: PrismaClient, fn: (sql: Sql) => Promise<T>): Promise<T> {
  try {
    return await sqlTransaction(client, fn);
  } catch (err) {
    if (!(err instanceof NeedsPrismaTransaction)) throw err;
    return client.$transaction((tx) => fn(onPrisma(tx)), { timeout: 20_000 });
  }
}
