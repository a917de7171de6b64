// Live updates fan out from ONE listener per process: every statement that writes feed events NOTIFYs
// `support_events` (a trigger, at commit) with the tenant and conversation; open widget streams and console long
// polls wait here, in memory, for a notification that concerns them — instead of each polling the table. The feed
// itself (and its cursor) stays the truth: a waiter reads from its cursor after waking, so a missed notification
// (a reconnect) costs a little latency, never an event.
import { listen } from "@/lib/db/listener";
import { ensureDatabaseUrl } from "@/lib/db/server";
import type { FeedTopic } from "./feed-topics";

type Waiter = () => void;

/** The part of a reply being written that is safe to show (lib/runtime/reply-release), by conversation. */
export interface Draft {
  /** the shop whose conversation it is: a draft is answered only within its shop */
  tenantId: string;
  runId: string;
  /** everything released so far; null: the draft ended (its message is stored, or it was dropped) */
  text: string | null;
  /** orders notifications of one run (they may travel on different connections) */
  n: number;
  at: number;
}

interface Hub {
  ready: Promise<boolean> | null;
  byTenant: Map<string, Set<Waiter>>;
  /** waiters for a shop's queue (lib/live/feed-topics): woken only by notifications marked `q` */
  byTenantQueue: Map<string, Set<Waiter>>;
  /** by shop: the newest event id of a notification marked `q` */
  queueAnnounced: Map<string, bigint>;
  byConversation: Map<string, Set<Waiter>>;
  drafts: Map<string, Draft>;
  /** the newest event id notified for each conversation, and when */
  announced: Map<string, { id: bigint; at: number }>;
  /** how many times the listener came up (first, then after each loss): a change means notifications were missed */
  generation: number;
}

const g = globalThis as typeof globalThis & { __supportHub?: Hub };
const hub: Hub = (g.__supportHub ??= {
  ready: null,
  byTenant: new Map(),
  byTenantQueue: new Map(),
  queueAnnounced: new Map(),
  byConversation: new Map(),
  drafts: new Map(),
  announced: new Map(),
  generation: 0,
});
hub.byTenantQueue ??= new Map();
hub.queueAnnounced ??= new Map();
hub.drafts ??= new Map();
hub.announced ??= new Map();
hub.generation ??= 0;

/**
 * The listener's generation: read it before reading the feed and pass it to `waitForFeed` (`since`), so that a
 * reconnect in between — notifications missed — ends the wait at once instead of leaving the reader stale.
 */
export function listenerGeneration(): number {
  return hub.generation;
}

/** An announcement is kept this long (a stream reads what it announced well within it). */
const ANNOUNCED_TTL_MS = 60_000;

/**
 * The newest event id a notification announced for the conversation (0 if none lately). A notification is sent at
 * commit, so an event up to this id exists: a stream whose cursor is below it has something to read, even when the
 * notification came while it was not waiting, or its read was held back by an older transaction still in flight.
 */
export function announcedUpTo(conversationId: string): bigint {
  return hub.announced.get(conversationId)?.id ?? 0n;
}

/**
 * The newest event id a notification that concerns the shop's queue announced (0 if none): a queue whose cursor is
 * below it has something to read, even if an older transaction still holds it back from the feed.
 */
export function queueAnnouncedUpTo(tenantId: string): bigint {
  return hub.queueAnnounced.get(tenantId) ?? 0n;
}

function noteAnnounced(conversationId: string, id: bigint): void {
  const known = hub.announced.get(conversationId);
  if (known && known.id >= id) return;
  hub.announced.set(conversationId, { id, at: Date.now() });
  if (hub.announced.size > 20_000) {
    for (const [k, a] of hub.announced) if (Date.now() - a.at > ANNOUNCED_TTL_MS) hub.announced.delete(k);
  }
}

/** A draft lives at most this long without news (a worker that died mid-reply leaves none behind for good). */
const DRAFT_TTL_MS = 120_000;

/** The conversation's current draft, if a reply is being written — only for the conversation's own shop. */
export function currentDraft(scope: { tenantId: string; conversationId: string }): Draft | null {
  const { conversationId } = scope;
  const d = hub.drafts.get(conversationId);
  if (!d || d.tenantId !== scope.tenantId) return null;
  if (Date.now() - d.at > DRAFT_TTL_MS) {
    hub.drafts.delete(conversationId);
    return null;
  }
  return d;
}

/**
 * A draft notification (lib/live/drafts): kept if newer than what this process knows, and its waiters woken. Without
 * a run (`r: null`, a takeover's `endDraftAtCommit`), it ends whatever draft the conversation shows: as a newer `n` of
 * that draft, so every stream sends its end. Notifications arrive in commit order, so no draft published before the
 * takeover comes after it (and none is published after it).
 */
export function noteDraft(payload: { t: string; c: string; r: string | null; x: string | null; n: number }): void {
  const known = hub.drafts.get(payload.c);
  if (payload.r === null) {
    if (!known || known.tenantId !== payload.t || known.text === null) return;
    hub.drafts.set(payload.c, { ...known, text: null, n: known.n + 1, at: Date.now() });
    wakeAll(hub.byConversation.get(payload.c));
    return;
  }
  if (known && known.runId === payload.r && known.n >= payload.n) return;
  hub.drafts.set(payload.c, { tenantId: payload.t, runId: payload.r, text: payload.x, n: payload.n, at: Date.now() });
  if (hub.drafts.size > 10_000) {
    for (const [k, d] of hub.drafts) if (Date.now() - d.at > DRAFT_TTL_MS || d.text === null) hub.drafts.delete(k);
  }
  wakeAll(hub.byConversation.get(payload.c));
}

function wakeAll(set: Set<Waiter> | undefined) {
  if (!set) return;
  for (const w of [...set]) w();
}

/** Starts the process's listener once; false when it cannot (the caller then falls back to a timer). */
function start(): Promise<boolean> {
  hub.ready ??= ensureDatabaseUrl()
    .then((url) =>
      listen(
        url,
        "support_events",
        (payload) => {
          try {
            const { t, c, id, q } = JSON.parse(payload) as { t: string; c: string | null; id?: string; q?: boolean };
            if (c && id && /^\d{1,19}$/.test(id)) noteAnnounced(c, BigInt(id));
            wakeAll(hub.byTenant.get(t));
            // Without the mark (a database not migrated yet), every notification may concern the queue.
            if (q !== false) {
              if (id && /^\d{1,19}$/.test(id) && BigInt(id) > (hub.queueAnnounced.get(t) ?? 0n)) hub.queueAnnounced.set(t, BigInt(id));
              wakeAll(hub.byTenantQueue.get(t));
            }
            if (c) wakeAll(hub.byConversation.get(c));
          } catch {
            // not ours
          }
        },
        () => {
          // Reconnected: notifications may have been missed — everyone re-reads from their cursor.
          hub.generation++;
          for (const set of hub.byTenant.values()) wakeAll(set);
          for (const set of hub.byTenantQueue.values()) wakeAll(set);
          for (const set of hub.byConversation.values()) wakeAll(set);
        },
      ),
    )
    .then(() =>
      ensureDatabaseUrl().then((url) =>
        listen(url, "support_drafts", (payload) => {
          try {
            noteDraft(JSON.parse(payload));
          } catch {
            // not ours
          }
        }),
      ),
    )
    .then(() => {
      // Listening from now on: what was committed before was not heard, so a reader that read before counts as stale.
      hub.generation++;
      return true;
    })
    .catch(() => {
      hub.ready = null; // try again next time
      return false;
    });
  return hub.ready;
}

/**
 * Resolves `notified` when something may have been written for `scope` (a conversation's events, any of a tenant's,
 * or — with `topic: "queue"` — a tenant's that can change its queue), or the listener reconnected since generation
 * `since` (see `listenerGeneration`); `quiet` when `timeoutMs` passes with the listener up and nothing heard — the
 * caller has nothing to read; `timeout` when `signal` aborts, or, without a listener, after `fallbackMs` (the caller
 * polls: it must read to find out).
 */
export async function waitForFeed(
  scope: { tenantId: string; conversationId?: string; topic?: FeedTopic },
  opts: { timeoutMs: number; fallbackMs: number; signal?: AbortSignal; since?: number },
): Promise<"notified" | "quiet" | "timeout"> {
  // An abort that came before (the client left while the caller read): its event will not fire again.
  if (opts.signal?.aborted) return "timeout";
  const listening = await start();
  if (opts.signal?.aborted) return "timeout";
  if (opts.since !== undefined && opts.since !== hub.generation) return "notified";
  const map = scope.conversationId ? hub.byConversation : scope.topic === "queue" ? hub.byTenantQueue : hub.byTenant;
  const key = scope.conversationId ?? scope.tenantId;
  return new Promise((resolve) => {
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    const done = (how: "notified" | "quiet" | "timeout") => {
      clearTimeout(timer);
      set!.delete(waiter);
      if (!set!.size) map.delete(key);
      opts.signal?.removeEventListener("abort", onAbort);
      resolve(how);
    };
    const waiter = () => done("notified");
    const onAbort = () => done("timeout");
    const timer = setTimeout(() => done(listening ? "quiet" : "timeout"), listening ? opts.timeoutMs : opts.fallbackMs);
    set.add(waiter);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** How many waiters this process holds (for health and the load test). */
export function liveWaiters(): number {
  let n = 0;
  for (const s of hub.byTenant.values()) n += s.size;
  for (const s of hub.byTenantQueue.values()) n += s.size;
  for (const s of hub.byConversation.values()) n += s.size;
  return n;
}
