import "server-only";
import { noteDatabaseFailure } from "@/lib/db/outage";
import { log } from "@/lib/log";
import { MAX_EVENT_ID } from "@/lib/store/events";
import { sleep } from "@/lib/sleep";

/**
 * Server-Sent Events over the durable event feed. The stream reads the feed from its cursor, then waits for the
 * process's one listener (lib/live/hub) to say something was written for this conversation — by any process: the
 * database NOTIFYs at commit — and reads again. Frames carry only the event type and, for messages, the seq — never
 * internal data.
 *
 * A client that asks for views (`?view=1&after=<its last seq>`, the widget does) gets `followViews` instead: the
 * customer's view itself (what GET /conversation answers, with only the messages it has not seen) whenever it
 * changed, so it never fetches the view after an event — one request less per update for the server and the client,
 * and the change shows a round trip sooner.
 */

export const eventStreamHeaders = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store, no-transform",
  connection: "keep-alive",
  "x-accel-buffering": "no", // don't let a proxy buffer the stream
  "x-content-type-options": "nosniff",
};

const STREAM_LIFETIME_MS = 25_000;
const HEARTBEAT_MS = 10_000;
/** Without a listener (the database cannot be listened to), the stream polls this often. */
const FALLBACK_POLL_MS = 1_000;
/** After a notification that brought nothing yet (an older transaction still in flight holds it back), read again. */
const SETTLE_MS = 150;
/** How long an announced event may stay held back before the stream goes back to waiting for the next notification. */
const HELD_BACK_MAX_MS = 10_000;

/** A non-negative decimal event id, 0 when absent, null when malformed or past any id the database can hold. */
export function parseCursor(value: string | null): bigint | null {
  if (value === null || value === "") return 0n;
  if (!/^\d{1,19}$/.test(value)) return null;
  const id = BigInt(value);
  return id <= MAX_EVENT_ID ? id : null;
}

interface FeedEvent {
  id: bigint;
  type: string;
  data: unknown;
}

export function eventFrame(e: FeedEvent): string {
  const seq =
    e.data && typeof e.data === "object" && typeof (e.data as { seq?: unknown }).seq === "number"
      ? (e.data as { seq: number }).seq
      : undefined;
  const type = /^[a-z_.]{1,64}$/.test(e.type) ? e.type : "update";
  return `id: ${e.id}\nevent: ${type}\ndata: ${JSON.stringify(seq === undefined ? {} : { seq })}\n\n`;
}

/** A `view` frame: the customer's view as JSON (dates as ISO strings), its id the newest event its snapshot held. */
export function viewFrame(view: unknown, id: bigint): string {
  return `id: ${id}\nevent: view\ndata: ${JSON.stringify(view)}\n\n`;
}

/** A draft as the widget reads it: what is safe to show of the reply being written (text null: it ended). */
export function draftFrame(d: { runId: string; text: string | null }): string {
  return `event: draft\ndata: ${JSON.stringify({ runId: d.runId, text: d.text })}\n\n`;
}

type Draft = { runId: string; text: string | null; n: number };

/**
 * How a stream's wait ended (lib/live/hub `waitForFeed`): `notified` — something may have been written for it (or the
 * listener reconnected and may have missed it): read; `quiet` — the listener heard everything and nothing concerned
 * it: nothing to read, so an open stream at rest costs the database nothing; `timeout` — no listener (the poll's
 * tick), or the client left: read to find out.
 */
export type Wake = "notified" | "quiet" | "timeout";

/** What both streams' loops are given by `liveStream`. */
interface StreamIo {
  send: (text: string) => void;
  /** Aborted when the client goes away (or the stream ends). */
  stop: AbortSignal;
  /** While true, the loop goes on; after it the client reconnects. */
  alive: () => boolean;
  /** Milliseconds to wait at most before the next heartbeat or the end of the stream. */
  waitLeft: () => number;
  /** Sends the draft if it changed (its end only if a draft was shown), and a ping when nothing was sent lately. */
  afterReads: (draft: Draft | null) => void;
  /** The `n` of the last draft handled (-1: none). */
  draftSeen: () => number;
}

/**
 * The shell both streams share: the frames' encoding, the stream's lifetime (the client reconnects after it),
 * heartbeats, drafts, and ending cleanly — a failed read ends the stream (the client reconnects from where it was),
 * logged once per kind of database failure.
 */
function liveStream(signal: AbortSignal, what: string, loop: (io: StreamIo) => Promise<void>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const stop = new AbortController();
  signal.addEventListener("abort", () => stop.abort(), { once: true });
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      let lastWrite = Date.now();
      const send = (text: string) => {
        if (stop.signal.aborted) return;
        controller.enqueue(encoder.encode(text));
        lastWrite = Date.now();
      };
      send(`retry: 1500\n: connected\n\n`);
      const deadline = Date.now() + STREAM_LIFETIME_MS;
      let draftSent = -1;
      let sentAnyDraft = false;
      const io: StreamIo = {
        send,
        stop: stop.signal,
        alive: () => !stop.signal.aborted && Date.now() < deadline,
        waitLeft: () => Math.max(0, Math.min(HEARTBEAT_MS, deadline - Date.now())),
        afterReads: (draft) => {
          if (draft && draft.n !== draftSent) {
            draftSent = draft.n;
            if (draft.text !== null || sentAnyDraft) send(draftFrame(draft));
            sentAnyDraft ||= draft.text !== null;
          }
          if (Date.now() - lastWrite > HEARTBEAT_MS) send(": ping\n\n");
        },
        draftSeen: () => draftSent,
      };
      try {
        await loop(io);
      } catch (err) {
        // The client reconnects from where it was; nothing is lost by ending here.
        if (!noteDatabaseFailure(err, "live updates")) log.warn({ err }, `${what} failed`);
      }
      stop.abort();
      try {
        controller.close();
      } catch {
        // already closed by the client
      }
    },
    cancel() {
      stop.abort();
    },
  });
}

export function followEvents(a: {
  cursor: bigint;
  signal: AbortSignal;
  fetch: (after: bigint) => Promise<FeedEvent[]>;
  /** Resolves when something may have been written for this stream (see lib/live/hub `waitForFeed`). */
  wait: (timeoutMs: number, signal: AbortSignal) => Promise<Wake>;
  /** The reply being written, if any (lib/live/hub `currentDraft`): sent as `draft` frames whenever it changes. */
  draft?: () => Draft | null;
  /** The newest event id announced as committed for this stream (lib/live/hub `announcedUpTo`). */
  announced?: () => bigint;
}): ReadableStream<Uint8Array> {
  return liveStream(a.signal, "event stream", async (io) => {
    let cursor = a.cursor;
    let settle = 0;
    let heldBackSince: number | null = null;
    let quiet = false; // the last wait heard nothing for this stream: nothing to fetch
    while (io.alive()) {
      const events = quiet ? [] : await a.fetch(cursor);
      quiet = false;
      for (const e of events) {
        cursor = e.id;
        io.send(eventFrame(e));
      }
      if (events.length) {
        settle = 0;
        heldBackSince = null;
        if (events.length >= 100) continue; // more are waiting
      }
      // After the feed's events: a draft that ended is announced once its message can be read.
      io.afterReads(a.draft?.() ?? null);
      if ((a.announced?.() ?? 0n) > cursor) {
        // Committed (it was announced) but not read yet: an older transaction still in flight holds it back, or
        // its notification came while this stream was reading. Read again soon rather than wait for the next one.
        heldBackSince ??= Date.now();
        if (Date.now() - heldBackSince < HELD_BACK_MAX_MS) {
          await sleep(SETTLE_MS, io.stop);
          continue;
        }
      } else heldBackSince = null;
      if (settle > 0) {
        settle--;
        await sleep(SETTLE_MS, io.stop);
        continue;
      }
      const woke = await a.wait(io.waitLeft(), io.stop);
      if (woke === "notified" && !events.length) settle = 3;
      quiet = woke === "quiet";
    }
  });
}

/** What a view stream needs of a view: its messages, and what the customer sees besides them. */
interface StreamedView {
  status: string;
  owner: string | null;
  verified: boolean;
  pendingApprovals: number;
  lastSeq: number;
  messages: unknown[];
}

/**
 * The view stream (`?view=1`): the customer's view itself, sent when the stream opens (the messages after `after`)
 * and again whenever it changed — read once per notification of an event for this conversation, with only the
 * messages not sent yet. A notification is sent at commit, so a read after it sees what it announced: unlike the
 * event feed, no read waits for older transactions (the view is state, not a sequence), and one statement answers a
 * notification. Each frame's `id:` is the newest event id the view's snapshot held. Drafts as in `followEvents`.
 */
export function followViews(a: {
  after: number;
  signal: AbortSignal;
  /** The view with the messages after `afterSeq`, and the newest event id of its snapshot. */
  read: (afterSeq: number) => Promise<{ view: StreamedView; cursor: bigint }>;
  wait: (timeoutMs: number, signal: AbortSignal) => Promise<Wake>;
  draft?: () => Draft | null;
  /** The newest event id announced as committed for this conversation (lib/live/hub `announcedUpTo`). */
  announced?: () => bigint;
}): ReadableStream<Uint8Array> {
  const announced = () => a.announced?.() ?? 0n;
  return liveStream(a.signal, "view stream", async (io) => {
    let seenSeq = a.after;
    let shown: string | null = null; // what the last frame said besides its messages
    let readUpTo = -1n; // what had been announced when the view was last read
    let mustRead = true;
    while (io.alive()) {
      if (mustRead) {
        mustRead = false;
        readUpTo = announced();
        const { view, cursor } = await a.read(seenSeq);
        const said = JSON.stringify([view.status, view.owner, view.verified, view.pendingApprovals, view.lastSeq]);
        if (shown === null || view.messages.length || said !== shown) {
          io.send(viewFrame(view, cursor));
          shown = said;
          seenSeq = Math.max(seenSeq, view.lastSeq);
        }
      }
      // A draft that ended is announced after a view read since it ended (its message is in it, or follows).
      io.afterReads(a.draft?.() ?? null);
      // Announced while the view was being read: read again now.
      if (announced() > readUpTo) {
        mustRead = true;
        continue;
      }
      const woke = await a.wait(io.waitLeft(), io.stop);
      // Quiet: nothing was written for this conversation, and no notification can have been missed — nothing to read
      // (the heartbeat goes out above).
      if (woke === "quiet") continue;
      // An event, a reconnected listener (which announces nothing) or, without a listener, the poll's tick: read.
      // A draft alone only sends the draft, its end included: a draft ends after the step that stored its message
      // committed, and the one listener hears notifications in commit order, so that step's events were announced
      // before the end arrived — and read already (announced ≤ readUpTo), or they are read first (above).
      const next = a.draft?.() ?? null;
      const draftOnly = woke === "notified" && announced() <= readUpTo && next !== null && next.n !== io.draftSeen();
      mustRead = !draftOnly;
    }
  });
}

export { FALLBACK_POLL_MS };
