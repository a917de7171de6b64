import type { FeedState } from "./use-live-events";

/** A small "Live" / "Reconnecting…" indicator, announced politely when it changes. */
export function FeedIndicator({ state }: { state: FeedState }) {
  return (
    <p role="status" className="flex items-center gap-1.5 text-xs text-slate-600" data-feed={state}>
      <span aria-hidden="true" className={`inline-block h-2 w-2 rounded-full ${state === "live" ? "bg-emerald-500" : "bg-amber-500"}`} />
      {state === "live" ? "Live" : "Reconnecting… (will catch up from where it left off)"}
    </p>
  );
}
