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
  type RawBuilder,
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

/**
 * What `sendTogether` hands the driver inside one Kysely query: the statements, and whether COMMIT follows them.
 * Registered symbols: a built app bundles a copy of this module per route, and the copy that made the driver must
 * know what another copy's `sendTogether` sends.
 */
const TOGETHER = Symbol.for("support-agent.db.sentTogether");
type Together = CompiledQuery & { [TOGETHER]: { statements: CompiledQuery[]; commit: boolean; readAfter: CompiledQuery[] } };
/** The answers of statements sent together, on the first one's result. */
const ANSWERS = Symbol.for("support-agent.db.answers");

const toResult = <R>(result: pg.QueryResult): QueryResult<R> => {
  const writes = result.command === "INSERT" || result.command === "UPDATE" || result.command === "DELETE";
  return { rows: (result.rows ?? []) as R[], ...(writes ? { numAffectedRows: BigInt(result.rowCount ?? 0) } : {}) };
};

class PgConnection implements DatabaseConnection {
  constructor(readonly client: pg.PoolClient) {}
  broken = false;
  /**
   * A transaction's BEGIN not sent yet: it goes on the wire together with the transaction's first statement, so
   * the two take one round trip (each still has its own Sync and answer). A transaction that sends nothing never
   * sends its BEGIN, and its COMMIT or ROLLBACK has nothing to end.
   */
  pendingBegin: string | null = null;
  /** How the transaction ended when COMMIT went with its last statements (`sendTogether`): COMMIT or ROLLBACK. */
  endedWith: "COMMIT" | "ROLLBACK" | null = null;
  /** Writes waiting to go on the wire ahead of the transaction's next statement or its COMMIT (`sendWithNext`). */
  deferred: CompiledQuery[] = [];

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const text = query.sql;
    if (/^(begin|commit|rollback|start transaction)/i.test(text)) {
      const deferred = this.deferred;
      this.deferred = [];
      // A COMMIT with writes still waiting takes them with it (they are the transaction's last statements).
      if (deferred.length && /^commit/i.test(text) && !this.endedWith) {
        await this.send(deferred, true);
        return { rows: [{ command: "COMMIT" }] as R[] };
      }
      const ended = this.endedWith ?? (this.pendingBegin !== null ? (/^rollback/i.test(text) ? "ROLLBACK" : "COMMIT") : null);
      this.pendingBegin = null;
      this.endedWith = null;
      // Nothing was sent (an empty transaction), or it already ended with its last statements: nothing to send.
      if (ended) return { rows: [{ command: ended }] as R[] };
      const result = await this.client.query(text);
      return result.command === "ROLLBACK" || result.command === "COMMIT"
        ? { rows: [{ command: result.command }] as R[] }
        : toResult(result);
    }
    if (this.endedWith) throw new Error("this transaction already ended with the statements sent with its COMMIT");
    const together = (query as Partial<Together>)[TOGETHER];
    const deferred = this.deferred;
    this.deferred = [];
    const statements = [...deferred, ...(together?.statements ?? [query])];
    const readAfter = together?.readAfter ?? [];
    const answers = (await this.send(statements, together?.commit ?? false, readAfter, deferred.length)).slice(deferred.length);
    const first = toResult<R>(answers[0]!);
    return together ? Object.assign(first, { [ANSWERS]: answers.map((a) => a && toResult(a)) }) : first;
  }

  /**
   * Sends the pending BEGIN (if any), the statements and, with `commit`, COMMIT — all at once: the connection is in
   * pipeline mode while the driver holds it, so they take one round trip, and the server runs them in order.
   */
  private async send(
    statements: CompiledQuery[],
    commit: boolean,
    readAfter: CompiledQuery[] = [],
    /** how many of `statements`, first, were deferred writes (`sendWithNext`): their failure is a DeferredWriteError */
    deferredCount = 0,
  ): Promise<Array<pg.QueryResult | null>> {
    const begin = this.pendingBegin;
    this.pendingBegin = null;
    const named = (q: CompiledQuery) => this.client.query({ name: statementName(q.sql), text: q.sql, values: q.parameters.map(param) });
    const sent: Array<Promise<pg.QueryResult>> = [];
    // Corked, they leave in ONE write: written apart, each is a system call here and a TCP segment of its own (pg
    // turns Nagle off) for the server to read — on a network, a packet each. (pg's own cork per statement nests.)
    const socket = (this.client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
    socket?.cork?.();
    try {
      if (begin !== null) sent.push(this.client.query(begin));
      for (const q of statements) sent.push(named(q));
      if (commit) sent.push(this.client.query("commit"));
      for (const q of readAfter) sent.push(named(q)); // after COMMIT: they see what it committed
    } finally {
      socket?.uncork?.();
    }
    const settled = await Promise.allSettled(sent);
    const began = begin !== null ? settled.shift()! : null;
    // A read after the COMMIT that fails changes nothing of what was committed: its answer is null (read it again).
    const reads = settled.splice(settled.length - readAfter.length).map((r) => (r.status === "fulfilled" ? r.value : null));
    const committed = commit ? settled.pop()! : null;
    if (began?.status === "rejected") {
      // Only a connection that is failing refuses BEGIN; never hand it out again.
      this.broken = true;
      throw began.reason;
    }
    if (committed) {
      // The transaction is over either way: after a failed statement PostgreSQL answers COMMIT with ROLLBACK, and a
      // COMMIT that fails rolls back too.
      this.endedWith = committed.status === "fulfilled" && committed.value.command === "COMMIT" ? "COMMIT" : "ROLLBACK";
      if (committed.status === "rejected" && connectionFailed(committed.reason)) this.broken = true;
    }
    const failedAt = settled.findIndex((r) => r.status === "rejected");
    if (failedAt >= 0) {
      const reason = (settled[failedAt] as PromiseRejectedResult).reason;
      throw failedAt < deferredCount ? new DeferredWriteError(reason) : reason;
    }
    if (committed?.status === "rejected") throw committed.reason; // the statements ran, but nothing of them stands
    // An earlier statement of the transaction had failed (and its error was swallowed): nothing of it stands.
    if (this.endedWith === "ROLLBACK") throw new Error("the transaction was aborted and rolled back");
    return [...settled.map((r) => (r as PromiseFulfilledResult<pg.QueryResult>).value), ...reads];
  }

  // biome-ignore lint/correctness/useYield: streaming is not used by the runtime
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error("streaming queries are not supported");
  }
}

/**
 * A write sent with `sendWithNext` failed (reported by the send it went with, which then failed too: the transaction
 * commits nothing). Carries the database's error as `cause`, and its SQLSTATE as `code`.
 */
export class DeferredWriteError extends Error {
  readonly code: unknown;
  constructor(readonly cause: unknown) {
    super(`a write sent ahead of the transaction's next statement failed: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = "DeferredWriteError";
    this.code = (cause as { code?: unknown })?.code;
  }
}

/** An error that is not PostgreSQL's answer to a statement (it has no SQLSTATE): the connection itself failed. */
const connectionFailed = (err: unknown) =>
  typeof (err as { code?: unknown })?.code !== "string" || !/^[0-9A-Z]{5}$/.test((err as { code: string }).code);

/**
 * Sends `statements` at once on `db`'s connection — one round trip for all of them, run by the server one after
 * another, each with its own answer (an error in one does not stop the others, except that inside a transaction
 * PostgreSQL refuses every statement after a failed one) — and returns their answers, or throws the first error.
 * Inside a transaction, Kysely sends one query at a time: this is the way to send several. `commit` (inside a
 * transaction only): COMMIT goes right behind them, so the transaction ends with them; nothing may be sent on it
 * afterwards, and the caller must not fail after them (the commit cannot be taken back).
 */
export async function sendTogether<R = Record<string, unknown>>(
  db: Store,
  statements: Array<RawBuilder<unknown>>,
  opts: { commit?: boolean } = {},
): Promise<Array<QueryResult<R>>> {
  return (await send<R>(db, statements, opts.commit ?? false, [])).slice(0, statements.length) as Array<QueryResult<R>>;
}

/**
 * Inside a transaction: `write` goes on the wire with the transaction's next statement (or its COMMIT), ahead of it
 * and in the same round trip — for a write whose answer nobody waits for (an effect's ledger rows). Everything sent
 * after it sees it, as if it had been sent at once; it is never sent if the transaction rolls back first. Its failure
 * fails that next send with a DeferredWriteError, and the transaction then commits nothing.
 */
export async function sendWithNext(tx: Store, write: Compilable): Promise<void> {
  if (!tx.isTransaction) throw new Error("sendWithNext: only inside a transaction");
  const compiled = write.compile(tx);
  await tx.getExecutor().provideConnection(async (conn) => {
    // Duck-typed, as in storeOf: a built app may hold two copies of this module.
    const pgConn = conn as Partial<PgConnection>;
    if (!Array.isArray(pgConn.deferred)) {
      await conn.executeQuery(compiled); // another driver: sent at once
      return;
    }
    if (pgConn.endedWith) throw new Error("sendWithNext: this transaction already ended");
    pgConn.deferred.push(compiled);
  });
}

/** A read sent behind a COMMIT (`commitThenRead`): any Kysely query or `sql` fragment. */
export type Compilable = { compile(db: Store): CompiledQuery } | { compile(): CompiledQuery };

/**
 * `sendTogether` with COMMIT, and then `reads` on the same connection, in the same round trip: they run after the
 * commit and see what it committed (what a caller would read next, without waiting for the commit first). A read
 * that fails answers null (the commit stands; the caller reads again).
 */
export async function commitThenRead<R = Record<string, unknown>>(
  tx: Store,
  statements: Array<RawBuilder<unknown>>,
  reads: Compilable[],
): Promise<{ answers: Array<QueryResult<R>>; reads: Array<QueryResult<Record<string, unknown>> | null> }> {
  const all = await send<R>(tx, statements, true, reads);
  return {
    answers: all.slice(0, statements.length) as Array<QueryResult<R>>,
    reads: all.slice(statements.length) as Array<QueryResult<Record<string, unknown>> | null>,
  };
}

async function send<R>(db: Store, statements: Array<RawBuilder<unknown>>, commit: boolean, reads: Compilable[]) {
  if (commit && !db.isTransaction) throw new Error("sendTogether: COMMIT only ends a transaction");
  if (!statements.length) throw new Error("sendTogether: no statements");
  const compiled = statements.map((s) => s.compile(db));
  const first = compiled[0]!;
  const together: Together = {
    sql: first.sql,
    parameters: first.parameters,
    query: first.query,
    queryId: first.queryId,
    [TOGETHER]: { statements: compiled, commit, readAfter: reads.map((r) => r.compile(db)) },
  };
  const result = (await db.executeQuery(together)) as QueryResult<unknown> & { [ANSWERS]?: Array<QueryResult<R> | null> };
  const answers = result[ANSWERS];
  if (!answers) throw new Error("sendTogether: this store's driver cannot send statements together");
  return answers;
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
