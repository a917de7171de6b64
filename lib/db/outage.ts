// Database outages, told once. While the database is unreachable every request, worker pass and idle
// connection fails the same way; logging each one (with its stack) buries the one fact that matters. Callers
// hand their failure to `noteDatabaseFailure`: a connectivity failure is counted and logged once per kind, and
// the first connection that succeeds afterwards (lib/db/sql.ts createPool) logs one summary line.
//
// Every line this module and lib/db/server.ts write goes through `logDatabaseEvent` (the product's logger, a
// capture in tests).
import { log } from "@/lib/log";

type Level = "warn" | "error" | "info";
type LogLine = (level: Level, message: string, fields?: Record<string, unknown>) => void;

interface Outage {
  since: number;
  kinds: Set<string>;
  failures: Map<string, number>;
}

interface OutageState {
  current: Outage | null;
  log: LogLine;
}

const defaultLog: LogLine = (level, message, fields) => log[level](fields ?? {}, message);

// On globalThis: Next.js may evaluate this module more than once in one process; the outage is the process's.
const g = globalThis as typeof globalThis & { __supportDbOutage?: OutageState };
const state: OutageState = (g.__supportDbOutage ??= { current: null, log: defaultLog });

/** Replaces where database events are written (tests capture them); returns the previous writer. */
export function setDatabaseLogger(log: LogLine): LogLine {
  const previous = state.log;
  state.log = log;
  return previous;
}

/** The one place database events are written. */
export function logDatabaseEvent(level: Level, message: string, fields?: Record<string, unknown>): void {
  state.log(level, message, fields);
}

/**
 * Records a failure seen at `where` (a route, "worker", "health"…). Returns true when it is a connectivity
 * failure — the database is down, restarting or unreachable — in which case it has been counted and, if it is
 * the first of its kind in this outage, logged as one line; the caller should answer 503 and log nothing more.
 * Returns false for every other error, which the caller reports as before.
 */
export function noteDatabaseFailure(err: unknown, where: string): boolean {
  const kind = connectivityFailureKind(err);
  if (!kind) return false;
  const outage = (state.current ??= { since: Date.now(), kinds: new Set(), failures: new Map() });
  outage.failures.set(where, (outage.failures.get(where) ?? 0) + 1);
  if (!outage.kinds.has(kind)) {
    outage.kinds.add(kind);
    logDatabaseEvent("error", `database unavailable (${kind}) — requests fail with 503 until it returns`, { kind, firstSeenBy: where });
  }
  return true;
}

/** Called when a connection to the database succeeds: ends the current outage, if any, with one summary line. */
export function noteDatabaseReachable(): void {
  const outage = state.current;
  if (!outage) return;
  state.current = null;
  const seconds = ((Date.now() - outage.since) / 1000).toFixed(1);
  const total = [...outage.failures.values()].reduce((a, b) => a + b, 0);
  const byWhere = [...outage.failures.entries()].map(([where, n]) => `${where} ${n}`).join(", ");
  logDatabaseEvent("info", `database back after ${seconds} s; ${total} requests failed meanwhile (${byWhere})`, {
    outageMs: Date.now() - outage.since,
    failed: total,
  });
}

/** True while an outage is being counted (between the first connectivity failure and the next connection). */
export function databaseOutageInProgress(): boolean {
  return state.current !== null;
}

// Socket errors (Node), pg's own messages, SQLSTATEs of a server that is going away or not yet accepting,
// Prisma's codes and its driver adapter's error kinds.
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);
const SQLSTATE_LABELS: Record<string, string> = {
  "57P01": "57P01 server shutting down",
  "57P02": "57P02 server crashed",
  "57P03": "57P03 server starting",
};
const PRISMA_CODES: Record<string, string> = {
  P1001: "ECONNREFUSED",
  P1002: "timeout",
  P1017: "connection lost",
};
const ADAPTER_KINDS: Record<string, string> = {
  DatabaseNotReachable: "ECONNREFUSED",
  ConnectionClosed: "connection lost",
  SocketTimeout: "timeout",
};
const MESSAGES: Array<[RegExp, string]> = [
  [/the database did not answer within/i, "not answering"],
  [/Connection terminated due to connection timeout|timeout exceeded when trying to connect/i, "timeout"],
  [/Connection terminated|Client has encountered a connection error|not queryable|server closed the connection/i, "connection lost"],
  [/Can't reach database server/i, "ECONNREFUSED"],
  [/the database system is (starting up|shutting down|in recovery mode)/i, "57P03 server starting"],
];

/** The kind of connectivity failure `err` is ("ECONNREFUSED", "connection lost", …), or null if it is not one. */
export function connectivityFailureKind(err: unknown): string | null {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0) {
    const e = queue.shift();
    if (!e || typeof e !== "object" || seen.has(e)) continue;
    seen.add(e);
    const o = e as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown; meta?: unknown; kind?: unknown };
    const code = typeof o.code === "string" ? o.code : undefined;
    if (code && SOCKET_CODES.has(code)) return code;
    if (code && SQLSTATE_LABELS[code]) return SQLSTATE_LABELS[code];
    if (code?.startsWith("08")) return `${code} connection failure`;
    if (code && PRISMA_CODES[code]) return PRISMA_CODES[code];
    if (typeof o.kind === "string") {
      if (ADAPTER_KINDS[o.kind]) return ADAPTER_KINDS[o.kind];
      const original = (o as { originalCode?: unknown }).originalCode;
      if (typeof original === "string") queue.push({ code: original });
    }
    if (typeof o.message === "string") {
      for (const [pattern, kind] of MESSAGES) if (pattern.test(o.message)) return kind;
    }
    queue.push(o.cause);
    if (Array.isArray(o.errors)) queue.push(...o.errors);
    const meta = o.meta as { driverAdapterError?: { cause?: unknown } } | undefined;
    if (meta && typeof meta === "object") queue.push(meta.driverAdapterError?.cause, meta.driverAdapterError);
  }
  return null;
}

/**
 * `work`'s result, or — when the database has not answered within `ms` — a connectivity failure of kind "not
 * answering". For what must answer in a bounded time (the health check) when the database stops answering without
 * closing (a vanished host, a partition, a frozen server): its query goes on waiting on its connection, unawaited.
 */
export function answeredWithin<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the database did not answer within ${ms / 1000} s`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
