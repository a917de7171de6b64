"use client";

import { useEffect, useRef } from "react";
import type { WidgetMessage } from "@/lib/widget/api-types";
import { LocalTime } from "@/components/ui/local-time";

/**
 * The conversation. Every text is rendered as a React text node (never as HTML), so nothing a customer,
 * the model or a tool writes can become markup or script. Each message says who wrote it, visibly and
 * for screen readers; role="log" announces new messages politely.
 */
export function MessageList({
  messages,
  pending,
  draft = null,
  shopName,
}: {
  messages: WidgetMessage[];
  pending: string | null;
  /** the assistant's reply as it is being written (what is safe to show so far) */
  draft?: string | null;
  shopName: string;
}) {
  const end = useRef<HTMLLIElement>(null);
  const container = useRef<HTMLOListElement>(null);
  const count = messages.length + (pending ? 1 : 0) + (draft ? draft.length : 0);

  useEffect(() => {
    // Follow new messages, unless the reader scrolled up to read something older.
    const el = container.current;
    if (!el) return;
    const nearBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 160;
    if (nearBottom || count <= 1) end.current?.scrollIntoView({ block: "end" });
  }, [count]);

  return (
    <ol
      ref={container}
      role="log"
      aria-live="polite"
      aria-label="Conversation"
      className="flex min-h-0 flex-1 flex-col gap-3 overflow-y-auto overscroll-contain px-3 py-4"
      data-testid="widget-messages"
    >
      {messages.length === 0 && !pending ? (
        <li className="m-auto max-w-[18rem] text-center text-sm text-slate-500">
          Hi! Ask us about an order, a refund, a return or anything else. A person from {shopName} can join at any time.
        </li>
      ) : null}
      {messages.map((m) => (
        <MessageItem key={m.seq} message={m} />
      ))}
      {pending ? (
        <li className="flex flex-col items-end" data-from="customer" aria-busy="true">
          <span className="sr-only">You (sending):</span>
          <p className="max-w-[85%] whitespace-pre-wrap break-words rounded-2xl rounded-br-sm bg-blue-600/70 px-3 py-2 text-[15px] text-white [overflow-wrap:anywhere]">
            {pending}
          </p>
          <span className="mt-1 text-xs text-slate-500">Sending…</span>
        </li>
      ) : null}
      {draft ? (
        // Not announced as it grows (aria-busy): the finished reply is announced once, as a message.
        <li className="flex flex-col items-start" data-from="agent" data-draft="true" aria-busy="true">
          <span className="sr-only">Assistant (writing):</span>
          <p className="max-w-[85%] whitespace-pre-wrap break-words rounded-2xl rounded-bl-sm bg-slate-100 px-3 py-2 text-[15px] text-slate-900 [overflow-wrap:anywhere]">
            {draft}
          </p>
        </li>
      ) : null}
      <li ref={end} aria-hidden="true" className="h-px shrink-0" />
    </ol>
  );
}

function MessageItem({ message: m }: { message: WidgetMessage }) {
  const time = <LocalTime at={m.at} style="time" className="text-[11px] text-slate-500" />;
  if (m.from === "system") {
    return (
      <li className="mx-auto flex max-w-[92%] flex-col items-center" data-from="system" data-seq={m.seq}>
        <p className="whitespace-pre-wrap break-words rounded-lg border border-amber-200 bg-amber-50 px-3 py-2 text-center text-sm text-amber-900 [overflow-wrap:anywhere]">
          <span className="sr-only">Notice: </span>
          {m.text}
        </p>
      </li>
    );
  }
  if (m.from === "customer") {
    return (
      <li className="flex flex-col items-end" data-from="customer" data-seq={m.seq}>
        <span className="sr-only">You:</span>
        <p className="max-w-[85%] whitespace-pre-wrap break-words rounded-2xl rounded-br-sm bg-blue-600 px-3 py-2 text-[15px] text-white [overflow-wrap:anywhere]">
          {m.text}
        </p>
        {time}
      </li>
    );
  }
  const isPerson = m.from === "person";
  const who = isPerson ? (m.name ?? "Support team") : "Assistant";
  return (
    <li className="flex flex-col items-start" data-from={m.from} data-seq={m.seq}>
      <span className={`mb-1 flex items-center gap-1 text-xs font-medium ${isPerson ? "text-emerald-800" : "text-slate-600"}`}>
        {isPerson ? (
          <>
            <span
              aria-hidden="true"
              className="inline-flex h-5 w-5 items-center justify-center rounded-full bg-emerald-600 text-[10px] font-bold text-white"
            >
              {who.slice(0, 1).toUpperCase()}
            </span>
            {who}
            <span className="font-normal text-emerald-700">· support team</span>
          </>
        ) : (
          who
        )}
        <span className="sr-only">:</span>
      </span>
      <p
        className={`max-w-[85%] whitespace-pre-wrap break-words rounded-2xl rounded-bl-sm px-3 py-2 text-[15px] [overflow-wrap:anywhere] ${
          isPerson ? "border border-emerald-200 bg-emerald-50 text-emerald-950" : "bg-slate-100 text-slate-900"
        }`}
      >
        {m.text}
      </p>
      {time}
    </li>
  );
}
