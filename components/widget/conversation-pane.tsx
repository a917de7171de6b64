"use client";

import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import type { WidgetSession, WidgetView } from "@/lib/widget/api-types";
import { askForPerson, fetchView, sendMessage, WidgetApiError } from "./widget-api";
import { useLiveUpdates } from "./use-live-updates";
import { isBusy, mergeView, pendingNotice, visibleStatus } from "./view-state";
import { WidgetHeader } from "./widget-header";
import { WidgetFooter } from "./widget-footer";
import { MessageList } from "./message-list";
import { StatusBanner, TypingIndicator } from "./status-banner";
import { Composer } from "./composer";

/** What the customer is told when a call fails: the API's own sentence; a rate limit is a polite notice, not an error. */
type ShownError = { message: string; limited: boolean };

function plainError(err: unknown): ShownError {
  if (!(err instanceof WidgetApiError)) return { message: "Something went wrong. Please try again.", limited: false };
  return { message: err.message, limited: err.code === "RATE_LIMITED" };
}

/**
 * One conversation: the view (TanStack Query, merged by seq), live updates that trigger a resync, sending,
 * "talk to a person", and what the embed needs to know (unread replies while the chat is closed).
 */
export function ConversationPane(a: {
  shop: string;
  shopName: string;
  offline: boolean;
  session: WidgetSession;
  notice: string | null;
  open: boolean;
  focusSignal: number;
  onClose: (() => void) | null;
  reportUnread: (count: number) => void;
  onGone: () => void;
}) {
  const { shop, session } = a;
  const token = session.token;
  const qc = useQueryClient();
  const queryKey = ["widget-view", shop, token] as const;
  const inputRef = useRef<HTMLTextAreaElement>(null);
  const [error, setError] = useState<ShownError | null>(null);
  const [live, setLive] = useState(false);

  const viewQuery = useQuery({
    queryKey,
    queryFn: async ({ signal }) => {
      const before = qc.getQueryData<WidgetView>(queryKey);
      const { view } = await fetchView(shop, token, before?.lastSeq ?? 0, signal);
      // Merge into what is cached NOW (a send may have added messages meanwhile); never drop a message.
      return mergeView(qc.getQueryData<WidgetView>(queryKey), view);
    },
    initialData: session.view,
    // Fresh until told otherwise: the session's answer carried the view, the stream brings every change (it opens
    // with a read of its own), and the poll below covers a stream that is down. Left at 0, the query would read
    // the conversation again on mount, a moment after the session's answer — one view read per opened chat.
    staleTime: Number.POSITIVE_INFINITY,
    // A safety net under the live stream, which carries every change while it is open: poll every 30 s then; while
    // it is down, briskly if something is in progress, rarely otherwise.
    refetchInterval: (q) => (live ? 30_000 : isBusy(q.state.data) ? 2500 : 15_000),
  });
  const view = viewQuery.data;

  // Coalesce bursts of events (one run writes several) into one refetch.
  const timer = useRef<number | null>(null);
  const resync = useCallback(() => {
    if (timer.current !== null) return;
    timer.current = window.setTimeout(() => {
      timer.current = null;
      void qc.invalidateQueries({ queryKey: ["widget-view", shop, token] });
    }, 60);
  }, [qc, shop, token]);
  useEffect(() => () => void (timer.current !== null && window.clearTimeout(timer.current)), []);

  // The reply being written, as far as it is safe to show. It ends when the stored reply arrives, or disappears
  // when the turn went on to a tool or the reply was sent back.
  const [draft, setDraft] = useState<{ runId: string; text: string; lastSeq: number } | null>(null);
  // The draft as the stream last set it (a draft and its end may be handled before a render in between).
  const lastDraft = useRef<{ runId: string; lastSeq: number } | null>(null);
  const onDraft = useCallback(
    (d: { runId: string; text: string | null }) => {
      const key = ["widget-view", shop, token] as const;
      if (d.text) {
        const lastSeq = qc.getQueryData<WidgetView>(key)?.lastSeq ?? 0;
        lastDraft.current = { runId: d.runId, lastSeq };
        setDraft({ runId: d.runId, text: d.text, lastSeq });
        return;
      }
      const ended = lastDraft.current?.runId === d.runId ? lastDraft.current : null;
      if (ended) lastDraft.current = null;
      const drop = () => setDraft((cur) => (cur?.runId === d.runId ? null : cur));
      // The stream sends a draft's end only after the view holding its stored reply (lib/widget/event-stream
      // `followViews`): when that reply is in place, the draft simply goes — no read of the conversation. A draft that
      // ended without one (the turn went on to a tool, or the reply was sent back) stays until a read says what is there.
      const view = qc.getQueryData<WidgetView>(key);
      const replaced = !ended || !!view?.messages.some((m) => m.seq > ended.lastSeq && m.from === "agent");
      if (replaced) drop();
      else void qc.invalidateQueries({ queryKey: key }).finally(drop);
    },
    [qc, shop, token],
  );
  useEffect(() => {
    // A newer agent message than the draft's start replaces it.
    if (draft && view.messages.some((m) => m.seq > draft.lastSeq && m.from === "agent")) setDraft(null);
  }, [draft, view.messages]);

  // The stream carries the view: merged like a fetched one (by seq, never dropping a message).
  const views = useMemo(
    () => ({
      lastSeq: () => qc.getQueryData<WidgetView>(["widget-view", shop, token])?.lastSeq ?? 0,
      onView: (next: WidgetView) => qc.setQueryData<WidgetView>(["widget-view", shop, token], (prev) => mergeView(prev, next)),
    }),
    [qc, shop, token],
  );
  useLiveUpdates({ shop, token, cursor: session.cursor, onActivity: resync, onGone: a.onGone, onDraft, views, onConnection: setLive });

  // A request's answer carries the view as it left it; what follows comes with the stream (or, while it is down,
  // a fetch).
  const afterRequest = useCallback(
    (res: { view: WidgetView }) => {
      qc.setQueryData<WidgetView>(["widget-view", shop, token], (prev) => mergeView(prev, res.view));
      if (!live) void qc.invalidateQueries({ queryKey: ["widget-view", shop, token] });
    },
    [qc, shop, token, live],
  );

  const send = useMutation({
    mutationFn: (text: string) => sendMessage(shop, token, text),
    onSuccess: afterRequest,
  });

  const human = useMutation({
    mutationFn: () => askForPerson(shop, token),
    onSuccess: afterRequest,
    onError: (err) => setError(plainError(err)),
  });

  const onSend = useCallback(
    async (text: string) => {
      setError(null);
      try {
        await send.mutateAsync(text);
        return true;
      } catch (err) {
        setError(plainError(err));
        return false;
      }
    },
    [send],
  );

  // Tell the shop page how many replies arrived while the chat was closed (for the launcher's badge).
  const seenSeq = useRef(view.lastSeq);
  const { open, reportUnread } = a;
  useEffect(() => {
    if (open) {
      seenSeq.current = Math.max(seenSeq.current, ...view.messages.map((m) => m.seq));
      reportUnread(0);
      return;
    }
    const unread = view.messages.filter((m) => m.seq > seenSeq.current && m.from !== "customer").length;
    if (unread) reportUnread(unread);
  }, [open, view.messages, reportUnread]);

  // Opening the chat puts the cursor in the input, so a keyboard user can type at once.
  const { focusSignal } = a;
  useEffect(() => {
    if (focusSignal > 0) inputRef.current?.focus({ preventScroll: true });
  }, [focusSignal]);

  const status = visibleStatus(view);
  const personState = human.isPending
    ? "requesting"
    : status === "with_person"
      ? "with_person"
      : status === "waiting_for_person"
        ? "requested"
        : "available";

  return (
    <>
      <WidgetHeader
        shopName={a.shopName}
        customerName={session.customer?.name ?? null}
        personState={personState}
        onTalkToPerson={() => {
          setError(null);
          human.mutate();
        }}
        onClose={a.onClose}
      />
      <StatusBanner status={status} notice={pendingNotice(view)} owner={view.owner} shopName={a.shopName} />
      {a.notice ? (
        <p
          role="note"
          className="shrink-0 border-b border-slate-200 bg-slate-50 px-3 py-2 text-sm text-slate-700"
          data-testid="widget-notice"
        >
          {a.notice}
        </p>
      ) : null}
      <MessageList
        messages={view.messages}
        pending={send.isPending ? (send.variables ?? null) : null}
        draft={draft?.text ?? null}
        shopName={a.shopName}
      />
      <TypingIndicator active={status === "working" || send.isPending} />
      <div role="alert" className="shrink-0 px-3" data-testid="widget-error">
        {error ? (
          <p
            data-limited={error.limited || undefined}
            className={
              error.limited
                ? "mb-2 rounded-lg border border-amber-200 bg-amber-50 px-3 py-2 text-sm text-amber-900"
                : "mb-2 rounded-lg border border-red-200 bg-red-50 px-3 py-2 text-sm text-red-800"
            }
          >
            {error.message}
          </p>
        ) : null}
      </div>
      <Composer disabled={false} sending={send.isPending} onSend={onSend} inputRef={inputRef} />
      <WidgetFooter offline={a.offline} />
    </>
  );
}
