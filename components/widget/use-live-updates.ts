"use client";

import { useEffect, useRef } from "react";
import type { WidgetView } from "@/lib/widget/api-types";
import { SseParser } from "@/lib/widget/sse-parser";
import { eventsUrl } from "./widget-api";

/**
 * Follows the conversation's live updates. The stream is read with fetch() so the token stays in a header.
 * Every (re)connection sends the last event id it saw, so an event that happened while disconnected is never
 * missed. With `views`, the stream carries the view itself (`?view=1&after=<last seq>`: the messages after the
 * last one the widget has, when it opens and whenever the view changed) and `onView` merges it — no request per
 * update. Without, every (re)connection and event calls `onActivity`, the cue to refetch the view from the last seq.
 */
export function useLiveUpdates(a: {
  shop: string;
  token: string | null;
  cursor: string | null;
  onActivity: () => void;
  onGone: () => void;
  /** The reply being written: what is safe to show so far (null: it ended — its message follows, or it was dropped). */
  onDraft?: (draft: { runId: string; text: string | null }) => void;
  /** The view travels in the stream: where the widget's messages end now, and what to do with a view frame. */
  views?: { lastSeq: () => number; onView: (view: WidgetView) => void };
  /** Whether the stream is open now (the widget's poll is only a slow safety net while it is). */
  onConnection?: (open: boolean) => void;
}) {
  const onActivity = useRef(a.onActivity);
  const onGone = useRef(a.onGone);
  const onDraft = useRef(a.onDraft);
  const views = useRef(a.views);
  const onConnection = useRef(a.onConnection);
  useEffect(() => {
    onActivity.current = a.onActivity;
    onGone.current = a.onGone;
    onDraft.current = a.onDraft;
    views.current = a.views;
    onConnection.current = a.onConnection;
  });

  const { shop, token, cursor: initialCursor } = a;
  useEffect(() => {
    if (!token) return;
    const stop = new AbortController();
    let cursor = initialCursor ?? "0";
    let failures = 0;

    async function connectOnce(): Promise<"again" | "gone"> {
      const asView = views.current;
      const url = asView ? `${eventsUrl(shop)}?view=1&after=${asView.lastSeq()}` : eventsUrl(shop);
      const res = await fetch(url, {
        headers: { authorization: `Bearer ${token}`, "last-event-id": cursor, accept: "text/event-stream" },
        cache: "no-store",
        signal: stop.signal,
      });
      if (res.status === 404 || res.status === 401) return "gone";
      if (!res.ok || !res.body) throw new Error(`live updates: HTTP ${res.status}`);
      failures = 0;
      onConnection.current?.(true);
      // (Re)connected: resync whatever happened while we were away (a view stream opens with it).
      if (!asView) onActivity.current();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      const parser = new SseParser();
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return "again";
          const events = parser.push(value);
          let feed = false;
          for (const e of events) {
            if (e.event === "draft" || e.event === "view") {
              try {
                const data = JSON.parse(e.data);
                if (e.event === "draft") onDraft.current?.(data as { runId: string; text: string | null });
                else asView?.onView(data as WidgetView);
              } catch {
                // A malformed draft is ignored (the stored reply follows anyway); a malformed view is fetched instead.
                if (e.event === "view") feed = true;
              }
            } else feed = true;
            if (e.id && /^\d+$/.test(e.id)) cursor = e.id;
          }
          if (feed) onActivity.current();
        }
      } finally {
        onConnection.current?.(false);
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
