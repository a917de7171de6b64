/**
 * What `npm run bench:peers` runs through every system, and how it measures them — shared by the product's side
 * (scripts/bench-peers.ts) and each peer's runner in this folder. No imports: the product's process and the peers'
 * processes each bring their own `pg`.
 *
 * One customer turn = the model proposes `lookup_order` → the tool runs (a real SELECT) → the model replies with
 * text: two model calls. The model is scripted (the same replies for everyone); time inside the model call and
 * inside tool bodies is measured and subtracted, so what remains is the harness's own time.
 */

/** The demo shop's orders that the scenario looks up (the same numbers, customers and amounts as prisma seed). */
export const SCENARIO_ORDERS = [
  { number: "A-1001", customerEmail: "dana@example.com", totalCents: 4250, status: "delivered" },
  { number: "A-1002", customerEmail: "dana@example.com", totalCents: 25000, status: "delivered" },
  { number: "A-1003", customerEmail: "dana@example.com", totalCents: 82000, status: "lost" },
  { number: "A-1004", customerEmail: "dana@example.com", totalCents: 46000, status: "delivered" },
] as const;

export const orderForTurn = (i: number) => SCENARIO_ORDERS[i % SCENARIO_ORDERS.length]!.number;
export const customerText = (i: number) => `Message ${i}: where is ${orderForTurn(i)}?`;
export const replyText = (order: string) => `Order ${order} is on record. Anything else?`;

/** The approval scenario: a $250 refund of A-1002, in the band that needs a person. */
export const REFUND_REQUEST_TEXT = "My order A-1002 arrived damaged, please refund it.";
export const REFUND_INPUT = { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" } as const;
export const REFUND_REPLY = "The $250.00 refund of A-1002 is done.";

/** The peers' own shop tables (the product has its own schema): what their tools read and write. */
export const PEER_SHOP_DDL = `
  CREATE TABLE IF NOT EXISTS orders (
    number text PRIMARY KEY, customer_email text NOT NULL, total_cents int NOT NULL, status text NOT NULL,
    refunded_cents int NOT NULL DEFAULT 0
  );
  CREATE TABLE IF NOT EXISTS refunds (
    id bigserial PRIMARY KEY, order_number text NOT NULL REFERENCES orders(number), amount_cents int NOT NULL,
    tool_call_id text, created_at timestamptz NOT NULL DEFAULT now()
  );`;

/** Creates and fills a peer's shop tables (idempotent). */
export async function preparePeerShop(db: Queryable) {
  await db.query(PEER_SHOP_DDL);
  for (const o of SCENARIO_ORDERS)
    await db.query(
      "INSERT INTO orders (number, customer_email, total_cents, status) VALUES ($1, $2, $3, $4) ON CONFLICT (number) DO NOTHING",
      [o.number, o.customerEmail, o.totalCents, o.status],
    );
}

/** The statements a peer's tools run, so both peers do exactly the same work in their tool bodies. */
export const LOOKUP_ORDER_SQL = "SELECT number, status, total_cents, refunded_cents FROM orders WHERE number = $1";
export const REFUND_SQL = `WITH r AS (INSERT INTO refunds (order_number, amount_cents, tool_call_id) VALUES ($1, $2, $3) RETURNING id)
  UPDATE orders SET refunded_cents = refunded_cents + $2 WHERE number = $1 RETURNING (SELECT id FROM r) AS refund_id`;

// ---- The line protocol between scripts/bench-peers.ts and a peer runner (JSON, one object per line). ----

export type RunnerCommand =
  | { cmd: "open" }
  /** customer turns `from` … `from + count - 1` (0-based) of an open conversation */
  | { cmd: "turns"; conversationId: string; from: number; count: number; measure: boolean }
  | { cmd: "approvals"; samples: number }
  | { cmd: "probes" }
  | { cmd: "exit" };

/** One measured customer turn. */
export interface TurnSample {
  turn: number;
  /** wall time − model time − tool-body time, ms */
  harnessMs: number;
  modelMs: number;
  toolMs: number;
  /** `query()` calls that reached a pg connection during the turn (each one round trip; BEGIN/COMMIT count) */
  statements: number;
  /** write transactions the turn committed (transaction ids assigned; each commit waits for its WAL flush) */
  commits: number;
  /** new row versions the turn wrote in the system's database, and their stored size (pg_column_size) */
  rows: number;
  rowBytes: number;
  /** WAL the server generated during the turn (the whole server; nothing else runs meanwhile) */
  walBytes: number;
}

export interface ApprovalSample {
  /** from the start of the approve decision to the start of the next model request */
  decisionToRequestMs: number;
  statements: number;
  /** refunds rows written for this approval (must be 1) */
  refunds: number;
}

export interface ProbeOutcome {
  refunds: number;
  /** what each resume returned, in words */
  detail: string;
}

export interface ProbeResult {
  /** the approve handler run twice for one approval, one after the other (a double click) */
  approvedTwice: ProbeOutcome;
  /** the state saved at the pause resumed twice, one after the other (a redelivered resume job) */
  resumedTwice: ProbeOutcome;
  /** two resumes of the same pause at once, each on its own connection */
  racing: ProbeOutcome;
}

export interface RunnerHello {
  ready: true;
  system: string;
  versions: Record<string, string>;
  /** how the peer is configured for durability, in words */
  configuration: string;
}

export type RunnerReply =
  | RunnerHello
  | { conversationId: string }
  | { samples: TurnSample[] }
  | { approvals: ApprovalSample[] }
  | { probes: ProbeResult }
  | { error: string };

// ---- Measurement, the same for every system. ----

/** Anything with pg's `query` (a Client, a Pool). */
export interface Queryable {
  query(text: string, params?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
}

/**
 * Counts `query()` calls on every pg connection of this process: patch the Client prototype of the `pg` module the
 * system itself uses. Pool.query and Prisma's adapter both end in Client.prototype.query. `roundTrips` counts the
 * calls that had to wait for an answer before going out: all of them, except a call on a connection in pg's pipeline
 * mode while an earlier one of that connection is still in flight (it travels with it). While `spans` is an array,
 * each statement's [call, answer] (performance.now()) is pushed to it: the time spent waiting for the database.
 */
export function countStatements(Client: { prototype: { query: (...args: never[]) => unknown } }): {
  count: number;
  roundTrips: number;
  spans: Array<[number, number]> | null;
  /** when set (an array), every statement's text, the round trip it went in and when it was sent and answered */
  sent: SentStatement[] | null;
  restore(): void;
} {
  const proto = Client.prototype as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  const inFlight = new WeakMap<object, number>();
  const counter = {
    count: 0,
    roundTrips: 0,
    spans: null as Array<[number, number]> | null,
    sent: null as SentStatement[] | null,
    restore: () => {
      proto.query = original;
    },
  };
  proto.query = function (this: object, ...args: unknown[]) {
    counter.count += 1;
    const pending = inFlight.get(this) ?? 0;
    if (pending === 0 || !(this as { pipeline?: boolean }).pipeline) counter.roundTrips += 1;
    const started = performance.now();
    let entry: SentStatement | null = null;
    if (counter.sent) {
      const q = args[0] as string | { text?: string; values?: unknown[] };
      entry = {
        text: typeof q === "string" ? q : (q.text ?? ""),
        values: typeof q === "string" ? (Array.isArray(args[1]) ? (args[1] as unknown[]) : []) : (q.values ?? []),
        trip: counter.roundTrips,
        sentAt: started,
        answeredAt: Number.NaN,
      };
      counter.sent.push(entry);
    }
    inFlight.set(this, pending + 1);
    const spans = counter.spans;
    const note = () => {
      inFlight.set(this, (inFlight.get(this) ?? 1) - 1);
      const answered = performance.now();
      if (spans) spans.push([started, answered]);
      if (entry) entry.answeredAt = answered;
    };
    // Answered through a callback (pg's Pool.query) or a promise (everything else).
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === "function")
      args[last] = (...answer: unknown[]) => {
        note();
        return callback(...answer);
      };
    const result = original.apply(this, args);
    if (result instanceof Promise) result.then(note, note);
    return result;
  };
  return counter;
}

/** Every statement sent on `Client`'s connections while `work` runs (the prototype is restored after, however it ends). */
export async function statementsSentWhile(
  Client: Parameters<typeof countStatements>[0],
  work: () => Promise<unknown>,
): Promise<SentStatement[]> {
  const counter = countStatements(Client);
  const sent: SentStatement[] = [];
  counter.sent = sent;
  try {
    await work();
  } finally {
    counter.restore();
  }
  return sent;
}

/** A statement as `countStatements` logs it: its text, its round trip, when it was sent and answered (performance.now()). */
export interface SentStatement {
  text: string;
  /** its parameters */
  values: unknown[];
  trip: number;
  sentAt: number;
  /** NaN until answered */
  answeredAt: number;
}

/**
 * The round trips of `sent` that went out before `until`, in order: each from its first statement's sending to the
 * last answer of its statements (statements that travelled together are one round trip; trips on two connections
 * may overlap in time).
 */
export function roundTripTimes(sent: SentStatement[], until = Number.POSITIVE_INFINITY) {
  const trips = new Map<number, { statements: string[]; from: number; to: number }>();
  for (const s of sent) {
    if (s.sentAt > until) continue;
    const trip = trips.get(s.trip);
    if (!trip) trips.set(s.trip, { statements: [s.text], from: s.sentAt, to: s.answeredAt });
    else {
      trip.statements.push(s.text);
      trip.to = Math.max(trip.to, s.answeredAt);
    }
  }
  return [...trips.values()].map((t) => ({ ...t, ms: t.to - t.from }));
}

/** `spans` as disjoint intervals within [from, to], in order. */
function unionWithin(spans: Array<[number, number]>, from: number, to: number): Array<[number, number]> {
  const clipped = spans
    .map(([a, b]) => [Math.max(a, from), Math.min(b, to)] as [number, number])
    .filter(([a, b]) => b > a)
    .sort((p, q) => p[0] - q[0]);
  const out: Array<[number, number]> = [];
  for (const [a, b] of clipped) {
    const last = out[out.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

/** Milliseconds of [from, to] covered by `spans` and not by `excluded` (say, statements outside model calls). */
export function coveredOutside(spans: Array<[number, number]>, excluded: Array<[number, number]>, from: number, to: number): number {
  const inside = unionWithin(spans, from, to);
  const out = unionWithin(excluded, from, to);
  let ms = 0;
  for (const [a, b] of inside) {
    ms += b - a;
    for (const [c, d] of out) ms -= Math.max(0, Math.min(b, d) - Math.max(a, c));
  }
  return ms;
}

/** Where writing stands now: the next transaction id and the WAL insert position. Assigns no xid, writes nothing. */
export async function writeMark(db: Queryable): Promise<{ xid: bigint; wal: bigint }> {
  const { rows } = await db.query(
    "SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text AS wal",
  );
  return { xid: BigInt(rows[0]!.xid as string), wal: BigInt(rows[0]!.wal as string) };
}

/** Write transactions and WAL between two marks (take `after` right when the work ends). */
export function between(mark: { xid: bigint; wal: bigint }, after: { xid: bigint; wal: bigint }) {
  return { commits: Number(after.xid - mark.xid), walBytes: Number(after.wal - mark.wal) };
}

/**
 * What was written since `mark` in this database: every row version (insert or update) whose xmin is at least the
 * mark's next xid, over every table of the public schema. Call it when the system is idle (it scans the tables; it is
 * never inside a timed region).
 */
export async function writtenSince(db: Queryable, mark: { xid: bigint; wal: bigint }) {
  const { rows: tables } = await db.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename");
  const xid32 = String(mark.xid % 4294967296n); // xmin is the 32-bit xid; a fresh database is far from wraparound
  const parts = tables.map(
    (t) =>
      `SELECT count(*)::bigint AS n, coalesce(sum(pg_column_size(x.*)), 0)::bigint AS b FROM "${String(t.tablename).replaceAll('"', '""')}" x WHERE x.xmin::text::bigint >= ${xid32}`,
  );
  const { rows } = await db.query(
    `SELECT coalesce(sum(n), 0)::text AS n, coalesce(sum(b), 0)::text AS b FROM (${parts.join(" UNION ALL ")}) s`,
  );
  return { rows: Number(rows[0]!.n), rowBytes: Number(rows[0]!.b) };
}

export const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : Number.NaN;
};
export const median = (xs: number[]) => percentile(xs, 50);

/**
 * A runner's main loop: reads commands from stdin, one JSON per line, and answers each with one JSON line on stdout.
 * Anything else a library prints goes to stderr, so stdout stays the protocol.
 */
export async function serveCommands(hello: RunnerHello, handle: (command: RunnerCommand) => Promise<RunnerReply | null>) {
  const out = process.stdout.write.bind(process.stdout);
  console.log = console.error; // keep stdout for the protocol
  console.info = console.error;
  out(`${JSON.stringify(hello)}\n`);
  let buffered = "";
  for await (const chunk of process.stdin) {
    buffered += String(chunk);
    for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (!line.trim()) continue;
      const command = JSON.parse(line) as RunnerCommand;
      let reply: RunnerReply | null;
      try {
        reply = await handle(command);
      } catch (err) {
        reply = { error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
      }
      if (reply === null) return;
      out(`${JSON.stringify(reply)}\n`);
    }
  }
}
