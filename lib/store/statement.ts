// One step of the runtime is ONE SQL statement: data-modifying CTEs, each written by a store function, composed
// here. A fenced statement (lib/store/lease.ts) starts with the lease renewal, and every write this builder renders
// reads FROM that CTE — so a write that must hold the lease cannot be expressed without the lease check: if the
// renewal matched no row, no write has a row to act on and nothing of the statement changes anything.
//
//   const s = fenced(lease, { counters: { turns: 1 } });
//   appendMessages(s, [reply]);                 // store functions add their CTEs
//   const row = await s.run(db, sql`msg.seq`);  // throws LeaseLostError when the lease was lost
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, type RawBuilder, sql } from "kysely";
import { type Compilable, commitThenRead, type DB, type Store, sendTogether } from "@/lib/db/kysely";

export type Table = keyof DB & string;
export type Column<T extends Table> = keyof DB[T] & string;
/** A row to write: column → a JS value (sent as a parameter) or an SQL expression (`sql\`…\``, `json(…)`). */
export type Values<T extends Table> = Partial<Record<Column<T>, unknown>>;

/** An SQL fragment (Kysely's `sql` tag). */
export type Sql<T = unknown> = RawBuilder<T>;

const isSql = (v: unknown): v is Sql => typeof v === "object" && v !== null && "toOperationNode" in v;

/** A JSON value for a jsonb column. Plain objects and arrays must go through it (never guessed). */
export function json(value: unknown): Sql {
  return sql`${JSON.stringify(value ?? null)}::jsonb`;
}

function valueSql(table: string, column: string, v: unknown): Sql {
  if (isSql(v)) return v;
  if (v !== null && typeof v === "object" && !(v instanceof Date)) {
    throw new Error(`${table}.${column}: wrap objects and arrays in json(…)`);
  }
  return sql`${v}`;
}

function columnsOf<T extends Table>(table: T, row: Values<T>) {
  const keys = Object.keys(row).filter((k) => row[k as Column<T>] !== undefined) as Column<T>[];
  return {
    names: sql.join(keys.map((k) => sql.ref(k))),
    values: sql.join(keys.map((k) => valueSql(table, k, row[k]))),
    keys,
  };
}

export interface WriteOptions {
  /** Other CTEs the write reads from (besides the lease, which a fenced statement always adds). */
  from?: string[];
  /** A condition on those sources (an INSERT … SELECT … WHERE). */
  where?: Sql<boolean>;
  /** RETURNING list, e.g. sql`id, seq`. */
  returning?: Sql;
  /** INSERT only: an ON CONFLICT clause, e.g. sql`("conversationId") WHERE … DO NOTHING`. */
  onConflict?: Sql;
}

/**
 * Builds one statement out of named CTEs. Writes are rendered by the builder (never passed in as raw text), so
 * the statement's guard — the lease, for a fenced statement — is part of every one of them.
 */
export class Statement {
  private readonly parts: Sql[] = [];
  private readonly names = new Set<string>();

  /** `guard`: the CTE every write must read from ("lease"), or null for writes that need no lease. */
  protected constructor(private readonly guard: string | null) {}

  /** A statement whose writes need no lease (intake, a reviewer's decision, expiry). */
  static plain(): Statement {
    return new Statement(null);
  }

  protected first(name: string, body: Sql): void {
    this.add(name, body);
  }

  private add(name: string, body: Sql): this {
    if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`bad CTE name ${name}`);
    if (this.names.has(name)) throw new Error(`CTE ${name} is defined twice`);
    this.names.add(name);
    this.parts.push(sql`${sql.raw(name)} AS (${body})`);
    return this;
  }

  has(name: string): boolean {
    return this.names.has(name);
  }

  /** A fresh CTE name with this prefix (`call0`, `call1`, …). */
  unique(prefix: string): string {
    for (let i = 0; ; i++) if (!this.names.has(`${prefix}${i}`)) return `${prefix}${i}`;
  }

  private sources(from: string[] | undefined): Sql | null {
    const all = [...(this.guard ? [this.guard] : []), ...(from ?? [])];
    for (const s of all) if (!this.names.has(s)) throw new Error(`unknown CTE ${s}`);
    return all.length ? sql.join(all.map((s) => sql.raw(s))) : null;
  }

  /** A read-only CTE (a SELECT). */
  select(name: string, body: Sql): this {
    if (/^\s*(insert|update|delete|merge)\b/i.test(body.compile(PLACEHOLDER).sql))
      throw new Error(`${name}: writes go through insert/update/delete`);
    return this.add(name, body);
  }

  /**
   * INSERT of one row; with a guard or sources, `INSERT … SELECT … FROM <guard, sources> [WHERE …]`; with a condition
   * alone, `INSERT … SELECT … WHERE …` (never dropped).
   */
  insert<T extends Table>(name: string, table: T, row: Values<T>, opts: WriteOptions = {}): this {
    const { names, values } = columnsOf(table, row);
    const from = this.sources(opts.from);
    const conflict = opts.onConflict ? sql` ON CONFLICT ${opts.onConflict}` : sql``;
    const returning = sql` RETURNING ${opts.returning ?? sql`${sql.table(table)}.id`}`;
    const where = opts.where ? sql` WHERE ${opts.where}` : sql``;
    const body = from
      ? sql`INSERT INTO ${sql.table(table)} (${names}) SELECT ${values} FROM ${from}${where}${conflict}${returning}`
      : opts.where
        ? sql`INSERT INTO ${sql.table(table)} (${names}) SELECT ${values}${where}${conflict}${returning}`
        : sql`INSERT INTO ${sql.table(table)} (${names}) VALUES (${values})${conflict}${returning}`;
    return this.add(name, body);
  }

  /**
   * INSERT of several rows given as JSON records: `columns` names each column's SQL type (the records travel as one
   * jsonb parameter and are typed by jsonb_to_recordset). Extra values shared by every row go in `shared`.
   */
  insertRecords<T extends Table>(
    name: string,
    table: T,
    records: Array<Values<T>>,
    columns: Partial<Record<Column<T>, string>>,
    shared: Values<T> = {},
    opts: WriteOptions = {},
  ): this {
    const recordCols = Object.keys(columns) as Column<T>[];
    const sharedCols = columnsOf(table, shared);
    const names = sql.join([...recordCols.map((k) => sql.ref(k)), ...sharedCols.keys.map((k) => sql.ref(k))]);
    const picked = records.map((r) => Object.fromEntries(recordCols.map((k) => [k, r[k] ?? null])));
    const typed = sql.join(recordCols.map((k) => sql`${sql.ref(k)} ${sql.raw(columns[k]!)}`));
    const values = sql.join([...recordCols.map((k) => sql`r.${sql.ref(k)}`), ...sharedCols.keys.map((k) => valueSql(table, k, shared[k]))]);
    const from = this.sources(opts.from);
    const returning = sql` RETURNING ${opts.returning ?? sql`${sql.table(table)}.id`}`;
    return this.add(
      name,
      sql`INSERT INTO ${sql.table(table)} (${names}) SELECT ${values} FROM jsonb_to_recordset(${JSON.stringify(picked)}::jsonb) AS r(${typed})${from ? sql`, ${from}` : sql``}${opts.where ? sql` WHERE ${opts.where}` : sql``}${returning}`,
    );
  }

  /** UPDATE … SET … [FROM <guard, sources>] WHERE `where`. */
  update<T extends Table>(name: string, table: T, set: Values<T>, where: Sql<boolean>, opts: Omit<WriteOptions, "where"> = {}): this {
    const keys = Object.keys(set).filter((k) => set[k as Column<T>] !== undefined) as Column<T>[];
    const assignments = sql.join(keys.map((k) => sql`${sql.ref(k)} = ${valueSql(table, k, set[k])}`));
    const from = this.sources(opts.from);
    const returning = sql` RETURNING ${opts.returning ?? sql`${sql.table(table)}.id`}`;
    return this.add(
      name,
      sql`UPDATE ${sql.table(table)} SET ${assignments}${from ? sql` FROM ${from}` : sql``} WHERE ${where}${returning}`,
    );
  }

  /** DELETE … [USING <guard, sources>] WHERE `where`. */
  delete<T extends Table>(name: string, table: T, where: Sql<boolean>, opts: Omit<WriteOptions, "where"> = {}): this {
    const from = this.sources(opts.from);
    const returning = sql` RETURNING ${opts.returning ?? sql`${sql.table(table)}.id`}`;
    return this.add(name, sql`DELETE FROM ${sql.table(table)}${from ? sql` USING ${from}` : sql``} WHERE ${where}${returning}`);
  }

  /** The whole statement with `select` as its final query. */
  protected build(select: Sql): Sql {
    if (!this.parts.length) return sql`SELECT ${select}`;
    return sql`WITH ${sql.join(this.parts)} SELECT ${select}`;
  }

  /** Runs the statement; `select` is the final SELECT list (over the CTEs). Returns its rows. */
  async rows<R>(db: Store, select: Sql = sql`1 AS one`): Promise<R[]> {
    return (await this.build(select).execute(db)).rows as R[];
  }

  /** Runs the statement and returns its first row (or null). */
  async run<R>(db: Store, select: Sql = sql`1 AS one`): Promise<R | null> {
    const [row] = await this.rows<R>(db, select);
    return row ?? null;
  }

  /**
   * Runs the statement as the last of transaction `tx`, with COMMIT sent right behind it (one round trip for both;
   * lib/db/kysely `sendTogether`), and returns its first row. The transaction is committed when this returns: the
   * caller sends nothing more on it and must not fail afterwards. Plain statements only (a fenced one checks its
   * lease on its rows).
   */
  async runThenCommit<R>(tx: Store, select: Sql = sql`1 AS one`): Promise<R | null> {
    if (this.guard) throw new Error("runThenCommit: a fenced statement checks its lease first; commit it apart");
    const [answer] = await sendTogether<R>(tx, [this.build(select)], { commit: true });
    return answer!.rows[0] ?? null;
  }

  /**
   * `runThenCommit`, and then `reads` on the same connection in the same round trip, after the COMMIT (they see what
   * it committed; lib/db/kysely `commitThenRead`). A read that failed answers null.
   */
  async runThenCommitAndRead<R>(
    tx: Store,
    select: Sql,
    reads: Compilable[],
  ): Promise<{ row: R | null; reads: Array<Array<Record<string, unknown>> | null> }> {
    if (this.guard) throw new Error("runThenCommitAndRead: a fenced statement checks its lease first; commit it apart");
    const sent = await commitThenRead<R>(tx, [this.build(select)], reads);
    return { row: sent.answers[0]!.rows[0] ?? null, reads: sent.reads.map((r) => r?.rows ?? null) };
  }
}

// Only used to render a fragment for the read-only check in `select`.

const PLACEHOLDER = new Kysely<DB>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new PostgresIntrospector(db),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});
