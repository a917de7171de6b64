"use client";

import { useEffect, useRef } from "react";
import { SseParser } from "@/lib/widget/sse-parser";
import { eventsUrl } from "./widget-api";

/**
 * Follows the conversation's live updates. The stream is read with fetch() so the token stays in a header.
 * Every (re)connection sends the last event id it saw and triggers a resync, so an event that happened
 * while disconnected is never missed; `onActivity` is the cue to refetch the view from the last seq.
 */
export function useLiveUpdates(a: {
  shop: string;
  token: string | null;
  cursor: string | null;
  onActivity: () => void;
  onGone: () => void;
  /** The reply being written: what is safe to show so far (null: it ended — its message follows, or it was dropped). */
  onDraft?: (draft: { runId: string; text: string | null }) => void;
}) {
  const onActivity = useRef(a.onActivity);
  const onGone = useRef(a.onGone);
  const onDraft = useRef(a.onDraft);
  useEffect(() => {
    onActivity.current = a.onActivity;
    onGone.current = a.onGone;
    onDraft.current = a.onDraft;
  });

  const { shop, token, cursor: initialCursor } = a;
  useEffect(() => {
    if (!token) return;
    const stop = new AbortController();
    let cursor = initialCursor ?? "0";
    let failures = 0;

    async function connectOnce(): Promise<"again" | "gone"> {
      const res = await fetch(eventsUrl(shop), {
        headers: { authorization: `Bearer ${token}`, "last-event-id": cursor, accept: "text/event-stream" },
        cache: "no-store",
        signal: stop.signal,
      });
      if (res.status === 404 || res.status === 401) return "gone";
      if (!res.ok || !res.body) throw new Error(`live updates: HTTP ${res.status}`);
      failures = 0;
      onActivity.current(); // (re)connected: resync whatever happened while we were away
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new SseParser();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return "again";
        const events = parser.push(value);
        let feed = false;
        for (const e of events) {
          if (e.event === "draft") {
            try {
              onDraft.current?.(JSON.parse(e.data) as { runId: string; text: string | null });
            } catch {
              // a malformed frame is ignored: the stored reply follows anyway
            }
            continue;
          }
          feed = true;
          if (e.id && /^\d+$/.test(e.id)) cursor = e.id;
        }
        if (feed) onActivity.current();
      }
    }

    void (async () => {
      while (!stop.signal.aborted) {
        try {
          if ((await connectOnce()) === "gone") {
            onGone.current();
            return;
          }
        } catch {
          if (stop.signal.aborted) return;
          failures++;
        }
        // Back off on failures (with jitter so many widgets don't reconnect in lockstep); reconnect at once otherwise.
        const wait = failures ? Math.min(15_000, 500 * 2 ** Math.min(failures, 5)) * (0.5 + Math.random() / 2) : 50;
        await new Promise((r) => setTimeout(r, wait));
      }
    })();
    return () => stop.abort();
  }, [shop, token, initialCursor]);
}
