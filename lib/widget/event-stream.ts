import "server-only";

/**
 * Server-Sent Events over the durable event feed. There is no in-memory pub/sub to trust (the worker and
 * the CLI run in other processes), so the stream polls the feed from its cursor: often while things move,
 * less when idle. Frames carry only the event type and, for messages, the seq — never internal data.
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
const FAST_POLL_MS = 400;
const SLOW_POLL_MS = 1_500;
const FAST_POLLS_AFTER_ACTIVITY = 15;

/** A non-negative decimal event id, 0 when absent, null when malformed. */
export function parseCursor(value: string | null): bigint | null {
  if (value === null || value === "") return 0n;
  return /^\d{1,19}$/.test(value) ? BigInt(value) : null;
}

interface FeedEvent {
  id: bigint;
  type: string;
  data: unknown;
}

export function eventFrame(e: FeedEvent): string {
  const seq = e.data && typeof e.data === "object" && typeof (e.data as { seq?: unknown }).seq === "number" ? (e.data as { seq: number }).seq : undefined;
  const type = /^[a-z_.]{1,64}$/.test(e.type) ? e.type : "update";
  return `id: ${e.id}\nevent: ${type}\ndata: ${JSON.stringify(seq === undefined ? {} : { seq })}\n\n`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

export function followEvents(a: { cursor: bigint; signal: AbortSignal; fetch: (after: bigint) => Promise<FeedEvent[]> }): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const stop = new AbortController();
  a.signal.addEventListener("abort", () => stop.abort(), { once: true });
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      let cursor = a.cursor;
      const send = (text: string) => {
        if (!stop.signal.aborted) controller.enqueue(encoder.encode(text));
      };
      send(`retry: 1500\n: connected\n\n`);
      const deadline = Date.now() + STREAM_LIFETIME_MS;
      let lastWrite = Date.now();
      let quietPolls = 0;
      try {
        while (!stop.signal.aborted && Date.now() < deadline) {
          const events = await a.fetch(cursor);
          for (const e of events) {
            cursor = e.id;
            send(eventFrame(e));
          }
          if (events.length) {
            quietPolls = 0;
            lastWrite = Date.now();
            if (events.length >= 100) continue; // more are waiting
          } else {
            quietPolls++;
          }
          if (Date.now() - lastWrite > HEARTBEAT_MS) {
            send(": ping\n\n");
            lastWrite = Date.now();
          }
          await sleep(quietPolls < FAST_POLLS_AFTER_ACTIVITY ? FAST_POLL_MS : SLOW_POLL_MS, stop.signal);
        }
      } catch (err) {
        // The client reconnects from its cursor; nothing is lost by ending here.
        console.error("[widget] event stream failed:", err instanceof Error ? err.message : err);
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
