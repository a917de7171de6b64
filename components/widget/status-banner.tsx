"use client";

import type { WidgetStatus } from "@/lib/widget/api-types";

/**
 * An honest line about what is happening while the customer waits on a person: what is pending and that
 * the answer will appear here by itself. Nothing is said to be done before it is.
 */
export function StatusBanner({
  status,
  notice,
  owner,
  shopName,
}: {
  status: WidgetStatus;
  notice: string | null;
  owner: string | null;
  shopName: string;
}) {
  let text: string | null = null;
  let tone = "border-amber-300 bg-amber-50 text-amber-950";
  if (status === "waiting_for_approval") {
    text = notice
      ? notice.replace(/\s*I'll update you here as soon as they decide\.?\s*$/i, "")
      : "Your request is with our team for approval.";
    text += " Their decision will appear here — you don't need to ask again.";
  } else if (status === "waiting_for_person") {
    text = `A person from ${shopName} has been asked to join. They'll reply here; you can keep writing.`;
  } else if (status === "with_person") {
    text = `You're chatting with ${owner ?? "a person"} from ${shopName}.`;
    tone = "border-emerald-300 bg-emerald-50 text-emerald-950";
  }
  return (
    <div role="status" aria-live="polite" className="shrink-0" data-testid="widget-status">
      {text ? (
        <p className={`flex items-start gap-2 border-b px-3 py-2 text-sm ${tone}`}>
          <svg viewBox="0 0 20 20" aria-hidden="true" className="mt-0.5 h-4 w-4 shrink-0" fill="none" stroke="currentColor" strokeWidth="2">
            {status === "with_person" ? (
              <circle cx="10" cy="10" r="5" fill="currentColor" stroke="none" />
            ) : (
              <>
                <circle cx="10" cy="10" r="8" />
                <path d="M10 5v5l3 2" strokeLinecap="round" />
              </>
            )}
          </svg>
          <span>{text}</span>
        </p>
      ) : null}
    </div>
  );
}

/** Shown while the agent is composing a reply. */
export function TypingIndicator({ active }: { active: boolean }) {
  return (
    <div role="status" aria-live="polite" className="shrink-0 px-3" data-testid="widget-typing">
      {active ? (
        <p className="flex items-center gap-2 pb-2 text-sm text-slate-600">
          <span aria-hidden="true" className="inline-flex gap-1">
            <span className="h-1.5 w-1.5 animate-bounce rounded-full bg-slate-400 [animation-delay:-0.3s]" />
            <span className="h-1.5 w-1.5 animate-bounce rounded-full bg-slate-400 [animation-delay:-0.15s]" />
            <span className="h-1.5 w-1.5 animate-bounce rounded-full bg-slate-400" />
          </span>
          The assistant is typing…
        </p>
      ) : null}
    </div>
  );
}
