// The runtime's typed SQL: Kysely over the PrismaClient's own pg pool (lib/db/client registers it), with row
// types generated from prisma/schema.prisma (prisma-kysely). Prisma keeps the schema, the migrations, the seed
// and the console's reads; the runtime's writes and hot reads go through here (lib/store/).
//
// Why Kysely: statements are built from typed tables and columns (a renamed column breaks the build, not a run),
// it composes data-modifying CTEs — so a step of the runtime is ONE statement — and it compiles to plain SQL
// that we send as named (prepared) statements on the pool, avoiding Prisma's per-statement pipeline cost
// (≈0.3–0.8 ms each, measured by `npm run bench`).
import { createHash } from "node:crypto";
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from "kysely";
import type pg from "pg";
import type { DB as GeneratedDB, Event as GeneratedEvent } from "@/lib/generated/kysely/types";

/** int8 columns come back as `bigint` (the pool's type parser, as Prisma returns them). */
export type DB = Omit<GeneratedDB, "Event"> & {
  Event: Omit<GeneratedEvent, "id"> & { id: import("kysely").Generated<bigint> };
};
export type { RunPhase, ToolCallStatus, HandoffStatus, HandoffKind, GateOutcome, ConversationStatus } from "@/lib/generated/kysely/enums";

export type Store = Kysely<DB>;

// Dates are written as UTC-naive text (as Prisma writes them); pg would write them in the process's zone.
function param(v: unknown): unknown {
  if (v instanceof Date) return v.toISOString();
  if (typeof v === "bigint") return v.toString();
  return v;
}

// The runtime sends the same few statements on every turn: named statements are parsed once per connection
// (and their plans cached by PostgreSQL). The name is derived from the text, so different texts never collide.
const names = new Map<string, string>();
function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `k_${createHash("sha1").update(text).digest("base64url").slice(0, 24)}`;
    if (names.size < 5000) names.set(text, name);
  }
  return name;
}

/** pg's Client in pipeline mode sends a query at once, without waiting for the answer to the one before. */
type PipelinedClient = pg.PoolClient & { pipeline: boolean };

class PgConnection implements DatabaseConnection {
  constructor(readonly client: pg.PoolClient) {}
  broken = false;
  /**
   * A transaction's BEGIN not sent yet: it goes on the wire together with the transaction's first statement, so
   * the two take one round trip (each still has its own Sync and answer). A transaction that sends nothing never
   * sends its BEGIN, and its COMMIT or ROLLBACK has nothing to end.
   */
  pendingBegin: string | null = null;

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const text = query.sql;
    const transactionControl = /^(begin|commit|rollback|start transaction)/i.test(text);
    const config = transactionControl ? text : { name: statementName(text), text, values: query.parameters.map(param) };
    const begin = this.pendingBegin;
    this.pendingBegin = null;
    let result: pg.QueryResult;
    if (begin === null) result = await this.client.query(config);
    else if (transactionControl) return { rows: [{ command: /^rollback/i.test(text) ? "ROLLBACK" : "COMMIT" }] as R[] };
    else result = await this.afterBegin(begin, config as pg.QueryConfig);
    if (result.command === "ROLLBACK" || result.command === "COMMIT") return { rows: [{ command: result.command }] as R[] };
    const writes = result.command === "INSERT" || result.command === "UPDATE" || result.command === "DELETE";
    return { rows: (result.rows ?? []) as R[], ...(writes ? { numAffectedRows: BigInt(result.rowCount ?? 0) } : {}) };
  }

  /** BEGIN and the first statement, pipelined (the connection is in pipeline mode while checked out: see the driver). */
  private async afterBegin(begin: string, config: pg.QueryConfig): Promise<pg.QueryResult> {
    const [began, first] = await Promise.allSettled([this.client.query(begin), this.client.query(config)]);
    if (began.status === "rejected") {
      // Only a connection that is failing refuses BEGIN; never hand it out again.
      this.broken = true;
      throw began.reason;
    }
    if (first.status === "rejected") throw first.reason;
    return first.value;
  }

  // biome-ignore lint/correctness/useYield: streaming is not used by the runtime
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming queries are not supported");
  }
}

/** A Kysely driver on an existing pg pool (the PrismaClient's), sending named statements. */
class PoolDriver implements Driver {
  constructor(private readonly pool: pg.Pool) {}
  async init() {}
  async acquireConnection(): Promise<DatabaseConnection> {
    const client = (await this.pool.connect()) as PipelinedClient;
    // Pipeline mode while this driver holds the connection (nothing is in flight when it is taken or given back):
    // a transaction's BEGIN travels with its first statement. Prisma's queries on the same pool stay as they were.
    client.pipeline = true;
    return new PgConnection(client);
  }
  async beginTransaction(conn: DatabaseConnection, settings: TransactionSettings) {
    const level = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : "";
    (conn as PgConnection).pendingBegin = level ? `start transaction${level}` : "begin";
  }
  async commitTransaction(conn: DatabaseConnection) {
    const { rows } = await conn.executeQuery<{ command: string }>(CompiledQuery.raw("commit"));
    // PostgreSQL answers COMMIT with ROLLBACK when an earlier error aborted the transaction.
    if (rows[0]?.command === "ROLLBACK") throw new Error("the transaction was aborted and rolled back");
  }
  async rollbackTransaction(conn: DatabaseConnection) {
    try {
      await conn.executeQuery(CompiledQuery.raw("rollback"));
    } catch (err) {
      (conn as PgConnection).broken = true;
      throw err;
    }
  }
  async releaseConnection(conn: DatabaseConnection) {
    const c = conn as PgConnection;
    (c.client as PipelinedClient).pipeline = false;
    c.client.release(c.broken);
  }
  async destroy() {
    // The pool belongs to the PrismaClient: ending it is its $disconnect's job.
  }
}

/** A Kysely instance over a pg pool (the pool's owner ends it). */
export function kyselyOnPool(pool: pg.Pool): Store {
  return new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new PoolDriver(pool),
      createIntrospector: (db) => new PostgresIntrospector(db),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  });
}

// On globalThis: the client is shared process-wide (lib/db/client), but a bundler gives instrumentation and each route
// its own copy of this module — a module-level map would know only the clients its own copy registered.
const stores: WeakMap<object, Store> = ((globalThis as { __supportStores?: WeakMap<object, Store> }).__supportStores ??= new WeakMap());

/** Remembers the store of a client (lib/db/client registers every PrismaClient it creates). */
export function registerStore(client: object, store: Store): void {
  stores.set(client, store);
}

/** The typed SQL store over a PrismaClient's pool. Every client made by `createPrisma` has one. */
export function storeOf(client: object): Store {
  // Already a store (or a transaction of one). Duck-typed: a built app may hold two copies of kysely's classes, so
  // `instanceof Kysely` can be false for a real one (a tool given the effect's transaction crashed that way).
  if (typeof (client as { selectFrom?: unknown }).selectFrom === "function") return client as Store;
  const store = stores.get(client);
  if (!store) throw new Error("this PrismaClient has no store: create it with createPrisma()");
  return store;
}
