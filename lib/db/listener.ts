// One LISTEN connection per process (and database), fanned out in memory: live views and workers wake on NOTIFY
// instead of each polling the database. It reconnects by itself (with backoff) when the database goes away, and
// tells subscribers so they catch up from their cursor (a notification sent while disconnected is lost; data is not).
// A connection that goes silent without closing (the host vanished, a NAT or a balancer forgot it) sends no "end":
// the listener checks its connection every 15 s, and drops one that stops answering as if it had closed.
import pg from "pg";
import { log } from "@/lib/log";
import { SERVER_KEEPALIVES } from "./sql";

export type Channel = "support_events" | "support_runs" | "support_drafts" | "support_after_commit";
type Handler = (payload: string) => void;

interface Listener {
  client: pg.Client | null;
  connecting: Promise<void> | null;
  handlers: Map<Channel, Set<Handler>>;
  reconnectHandlers: Set<() => void>;
  check: ConnectionCheck;
  stopped: boolean;
}

/** How often the listening connection is checked, and how long it has to answer before it is dropped. */
export interface ConnectionCheck {
  checkEveryMs: number;
  checkTimeoutMs: number;
}
// A check is one `SELECT 1` a process every 15 s; a silent connection is replaced within 15–20 s, under the 25 s after
// which a widget's stream reopens (and reads) anyway.
const defaultCheck: ConnectionCheck = { checkEveryMs: 15_000, checkTimeoutMs: 5_000 };

const g = globalThis as typeof globalThis & { __supportListeners?: Map<string, Listener> };
const listeners: Map<string, Listener> = (g.__supportListeners ??= new Map());

async function connect(url: string, l: Listener, attempt = 0): Promise<void> {
  if (l.stopped) return;
  // The server is asked for keepalives too: if this process's host vanishes, its session does not linger for hours.
  const client = new pg.Client({ connectionString: url, keepAlive: true, options: SERVER_KEEPALIVES });
  // From the start: a socket reset while connecting or subscribing must not be an uncaught exception (the server was
  // killed); the attempt fails and is retried below.
  client.on("error", () => undefined);
  try {
    await client.connect();
    for (const channel of l.handlers.keys()) await client.query(`LISTEN ${channel}`);
  } catch (err) {
    await client.end().catch(() => undefined);
    if (attempt === 0) log.warn({ err }, "cannot listen for database notifications; retrying");
    await new Promise((r) => setTimeout(r, Math.min(5000, 200 * 2 ** attempt)).unref());
    return connect(url, l, attempt + 1);
  }
  client.on("notification", (n) => {
    for (const h of l.handlers.get(n.channel as Channel) ?? []) h(n.payload ?? "");
  });
  // (errors are already ignored: "end" follows an error, and the reconnect happens there)
  const checks = setInterval(() => checkConnection(client, l), l.check.checkEveryMs).unref();
  client.on("end", () => {
    clearInterval(checks);
    if (l.client !== client || l.stopped) return;
    l.client = null;
    l.connecting = connect(url, l, 1).then(() => {
      l.connecting = null;
      for (const h of l.reconnectHandlers) h();
    });
  });
  l.client = client;
}

/** Drops the connection (its "end" then reconnects) when a `SELECT 1` on it is not answered in time. */
async function checkConnection(client: pg.Client, l: Listener): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<"silent">((resolve) => {
    timer = setTimeout(() => resolve("silent"), l.check.checkTimeoutMs);
  });
  const answer = client.query("SELECT 1").then(
    () => "answered" as const,
    () => "failed" as const, // the connection is closing: its "end" reconnects
  );
  const how = await Promise.race([answer, silent]);
  clearTimeout(timer);
  if (how !== "silent" || l.client !== client || l.stopped) return;
  log.warn({ timeoutMs: l.check.checkTimeoutMs }, "the database stopped answering the notification listener; listening again");
  // pg has no public way to drop a connection that does not answer (end() waits for the server): close the socket.
  (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
}

/**
 * Calls `handler` with each NOTIFY payload on `channel` of the database at `url`; `onReconnect` after the connection
 * was lost and re-established. Returns the unsubscribe function. `check` (tests) applies to a database's listener
 * when its first subscriber creates it.
 */
export async function listen(
  url: string,
  channel: Channel,
  handler: Handler,
  onReconnect?: () => void,
  check: ConnectionCheck = defaultCheck,
): Promise<() => void> {
  let l = listeners.get(url);
  if (!l) {
    l = { client: null, connecting: null, handlers: new Map(), reconnectHandlers: new Set(), check, stopped: false };
    listeners.set(url, l);
  }
  const listener = l;
  let set = listener.handlers.get(channel);
  const fresh = !set;
  if (!set) listener.handlers.set(channel, (set = new Set()));
  set.add(handler);
  if (onReconnect) listener.reconnectHandlers.add(onReconnect);
  if (!listener.client) {
    listener.connecting ??= connect(url, listener).finally(() => {
      listener.connecting = null;
    });
    await listener.connecting;
  } else if (fresh) {
    await listener.client.query(`LISTEN ${channel}`).catch(() => undefined);
  }
  return () => {
    set!.delete(handler);
    if (onReconnect) listener.reconnectHandlers.delete(onReconnect);
  };
}

/** Closes every listening connection (process shutdown, test teardown). */
export async function stopListeners(): Promise<void> {
  const all = [...listeners.values()];
  listeners.clear();
  for (const l of all) {
    l.stopped = true;
    await l.client?.end().catch(() => undefined);
  }
}
