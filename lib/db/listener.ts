// One LISTEN connection per process (and database), fanned out in memory: live views and workers wake on NOTIFY
// instead of each polling the database. It reconnects by itself (with backoff) when the database goes away, and
// tells subscribers so they catch up from their cursor (a notification sent while disconnected is lost; data is not).
import pg from "pg";
import { log } from "@/lib/log";

export type Channel = "support_events" | "support_runs" | "support_drafts";
type Handler = (payload: string) => void;

interface Listener {
  client: pg.Client | null;
  connecting: Promise<void> | null;
  handlers: Map<Channel, Set<Handler>>;
  reconnectHandlers: Set<() => void>;
  stopped: boolean;
}

const g = globalThis as typeof globalThis & { __supportListeners?: Map<string, Listener> };
const listeners: Map<string, Listener> = (g.__supportListeners ??= new Map());

async function connect(url: string, l: Listener, attempt = 0): Promise<void> {
  if (l.stopped) return;
  const client = new pg.Client({ connectionString: url });
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
  client.on("end", () => {
    if (l.client !== client || l.stopped) return;
    l.client = null;
    l.connecting = connect(url, l, 1).then(() => {
      l.connecting = null;
      for (const h of l.reconnectHandlers) h();
    });
  });
  l.client = client;
}

/**
 * Calls `handler` with each NOTIFY payload on `channel` of the database at `url`; `onReconnect` after the connection
 * was lost and re-established. Returns the unsubscribe function.
 */
export async function listen(url: string, channel: Channel, handler: Handler, onReconnect?: () => void): Promise<() => void> {
  let l = listeners.get(url);
  if (!l) listeners.set(url, (l = { client: null, connecting: null, handlers: new Map(), reconnectHandlers: new Set(), stopped: false }));
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
