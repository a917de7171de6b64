"use client";

import { useId, useState, type FormEvent, type KeyboardEvent, type RefObject } from "react";

const MAX_CHARS = 4000;

/** The message input: Enter sends, Shift+Enter adds a line; the send button is disabled while empty. */
export function Composer(a: {
  disabled: boolean;
  sending: boolean;
  onSend: (text: string) => Promise<boolean>;
  inputRef: RefObject<HTMLTextAreaElement | null>;
}) {
  const [text, setText] = useState("");
  const hintId = useId();
  const inputId = useId();
  const trimmed = text.trim();
  const tooLong = trimmed.length > MAX_CHARS;
  const canSend = !a.disabled && !a.sending && trimmed.length > 0 && !tooLong;

  async function submit(e?: FormEvent) {
    e?.preventDefault();
    if (!canSend) return;
    const sent = text;
    setText("");
    // Give the text back if it could not be sent, so nothing typed is lost.
    if (!(await a.onSend(sent.trim()))) setText((current) => (current ? current : sent));
  }

  function onKeyDown(e: KeyboardEvent<HTMLTextAreaElement>) {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      void submit();
    }
  }

  return (
    <form onSubmit={submit} className="shrink-0 border-t border-slate-200 bg-white px-3 pb-2 pt-2">
      <div className="flex items-end gap-2">
        <label htmlFor={inputId} className="sr-only">
          Your message
        </label>
        <textarea
          id={inputId}
          ref={a.inputRef}
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={onKeyDown}
          rows={Math.min(5, Math.max(1, text.split("\n").length))}
          placeholder="Write a message…"
          aria-describedby={hintId}
          aria-invalid={tooLong || undefined}
          disabled={a.disabled}
          className="min-h-11 min-w-0 flex-1 resize-none rounded-xl border border-slate-300 bg-white px-3 py-2.5 text-[15px] leading-5 text-slate-900 placeholder:text-slate-500 focus:border-blue-600 focus:outline-none disabled:bg-slate-100"
        />
        <button
          type="submit"
          disabled={!canSend}
          className="inline-flex h-11 shrink-0 items-center justify-center rounded-xl bg-blue-600 px-4 text-sm font-semibold text-white hover:bg-blue-700 disabled:cursor-not-allowed disabled:bg-slate-300 disabled:text-slate-600"
        >
          {a.sending ? "Sending…" : "Send"}
        </button>
      </div>
      <p id={hintId} className={`mt-1 text-xs ${tooLong ? "text-red-700" : "sr-only"}`}>
        {tooLong
          ? `That's ${trimmed.length} characters; the limit is ${MAX_CHARS}. Please shorten it.`
          : "Press Enter to send, Shift+Enter for a new line."}
      </p>
    </form>
  );
}
