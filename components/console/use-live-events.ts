"use client";
import { useQueryClient, type QueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";
import type { ConsoleEvent, ConsoleEvents } from "@/lib/console/queries";
import { getJson } from "./api";
import { type FeedTopic, touchesQueue } from "@/lib/live/feed-topics";
import { consoleKeys } from "./query-keys";

export const POLL_MS = 1500;
/** The server holds a request this long when nothing new is there yet (a long poll): no polling at rest. */
export const LONG_POLL_MS = 20_000;
const MAX_BACKOFF_MS = 15_000;

export type FeedState = "live" | "reconnecting";

/**
 * Refetches exactly what an event touches (only queries on screen actually refetch) — each query once per batch: a
 * second invalidation of a query in the same tick cancels the request the first one sent and sends another.
 */
export function invalidateForEvents(client: QueryClient, events: ConsoleEvent[]) {
  const conversations = new Set<string>();
  const handoffs = new Set<string>();
  let queue = false;
  for (const e of events) {
    const data = (e.data ?? {}) as { handoffId?: string };
    if (touchesQueue(e.type)) queue = true; // a take-over resolves the escalation too
    if (e.type.startsWith("handoff.") && data.handoffId) handoffs.add(data.handoffId);
    if (e.conversationId) conversations.add(e.conversationId);
  }
  if (queue) void client.invalidateQueries({ queryKey: consoleKeys.queueAll });
  for (const id of conversations) void client.invalidateQueries({ queryKey: consoleKeys.conversation(id) });
  // A handoff page: for its own handoff's events, and for its conversation's (it shows the run's phase and who holds
  // the conversation).
  if (handoffs.size || conversations.size)
    void client.invalidateQueries({
      queryKey: consoleKeys.handoffAll,
      predicate: (q) => {
        const shown = (q.state.data as { handoff?: { conversationId?: string } } | undefined)?.handoff;
        const [, , id] = q.queryKey; // consoleKeys.handoff(id)
        return handoffs.has(String(id)) || (!!shown?.conversationId && conversations.has(shown.conversationId));
      },
    });
}

/**
 * Follows the console event feed from `initialCursor` (the head read before the page's data was loaded,
 * so nothing between the two is missed). Long-polls: the server answers as soon as something is written for
 * the shop (its one listener is notified by the database) or after 20 s; on failure it backs off and then resumes
 * from the last cursor it saw — never from a time window — so a reconnect misses nothing.
 */
export function useLiveEvents({
  initialCursor,
  conversationId,
  onEvents,
  onDraft,
  topic,
}: {
  initialCursor: string;
  conversationId?: string;
  /** follow only the events that can change this view (the queue), not every event of the shop */
  topic?: FeedTopic;
  onEvents?: (events: ConsoleEvent[]) => void;
  /** For a conversation: the agent's reply as it is being written (null text: it ended). */
  onDraft?: (draft: { runId: string; text: string | null }) => void;
}): FeedState {
  const client = useQueryClient();
  const [state, setState] = useState<FeedState>("live");
  const onEventsRef = useRef(onEvents);
  onEventsRef.current = onEvents;
  const onDraftRef = useRef(onDraft);
  onDraftRef.current = onDraft;

  useEffect(() => {
    let cursor = initialCursor;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let inFlight = false;
    let failures = 0;
    let draftSeen: number | undefined;
    const abort = new AbortController();

    const schedule = (ms: number) => {
      clearTimeout(timer);
      if (!stopped) timer = setTimeout(poll, ms);
    };

    async function poll() {
      if (stopped || inFlight) return;
      inFlight = true;
      let next = 0;
      try {
        const params = new URLSearchParams({ cursor, wait: String(LONG_POLL_MS) });
        if (conversationId) params.set("conversationId", conversationId);
        else if (topic) params.set("topic", topic);
        if (conversationId && draftSeen !== undefined) params.set("draft", String(draftSeen));
        const page = await getJson<ConsoleEvents>(`/api/console/events?${params}`, abort.signal);
        if (page.events.length) {
          invalidateForEvents(client, page.events);
          onEventsRef.current?.(page.events);
        }
        if (page.draft && page.draft.n !== draftSeen) {
          draftSeen = page.draft.n;
          onDraftRef.current?.({ runId: page.draft.runId, text: page.draft.text });
        }
        cursor = page.cursor;
        failures = 0;
        setState("live");
        if (page.more) next = 0;
      } catch (err) {
        if ((err as Error).name === "AbortError") return;
        failures++;
        setState("reconnecting");
        next = Math.min(POLL_MS * 2 ** failures, MAX_BACKOFF_MS);
      } finally {
        inFlight = false;
      }
      schedule(next);
    }

    // Back online or back to the tab: catch up at once instead of waiting out the backoff.
    const wake = () => {
      if (document.visibilityState === "visible") schedule(0);
    };
    window.addEventListener("online", wake);
    document.addEventListener("visibilitychange", wake);
    schedule(0);
    return () => {
      stopped = true;
      clearTimeout(timer);
      abort.abort();
      window.removeEventListener("online", wake);
      document.removeEventListener("visibilitychange", wake);
    };
  }, [client, initialCursor, conversationId, topic]);

  return state;
}
