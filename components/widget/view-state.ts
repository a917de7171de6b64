import type { WidgetMessage, WidgetStatus, WidgetView } from "@/lib/widget/api-types";

/**
 * Merges a view (fetched, streamed or a request's answer; whole, or only messages after a seq) into what the widget
 * has: messages by seq, and the status of the newer of the two — a view read before the one the widget shows (a fetch
 * that was in flight when the stream brought a newer one) adds its messages but never takes the status back.
 */
export function mergeView(prev: WidgetView | undefined, next: WidgetView): WidgetView {
  if (!prev || prev.conversationId !== next.conversationId) return next;
  const bySeq = new Map<number, WidgetMessage>(prev.messages.map((m) => [m.seq, m]));
  for (const m of next.messages) bySeq.set(m.seq, m);
  const messages = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  if (isOlder(next, prev)) return { ...prev, messages, lastSeq: Math.max(prev.lastSeq, next.lastSeq) };
  return { ...next, messages, lastSeq: Math.max(prev.lastSeq, next.lastSeq) };
}

function isOlder(a: WidgetView, b: WidgetView): boolean {
  if (!/^\d+$/.test(a.version ?? "") || !/^\d+$/.test(b.version ?? "")) return false;
  return BigInt(a.version) < BigInt(b.version);
}

/**
 * The status the customer should see. A pending approval wins over "working": the handoff and its notice
 * are written before the run's phase changes, and the customer must never be told "typing…" when the truth
 * is "a person is reviewing this".
 */
export function visibleStatus(view: WidgetView): WidgetStatus {
  if (view.status === "with_person") return "with_person";
  if (view.pendingApprovals > 0) return "waiting_for_approval";
  return view.status;
}

/** The latest "…is with our team…" notice, which says exactly what waits and for what. */
export function pendingNotice(view: WidgetView): string | null {
  for (let i = view.messages.length - 1; i >= 0; i--) {
    const m = view.messages[i]!;
    if (m.from === "system" && /with our team/i.test(m.text)) return m.text;
  }
  return null;
}

export function isBusy(view: WidgetView | undefined): boolean {
  return !!view && (view.status === "working" || view.pendingApprovals > 0 || view.status === "waiting_for_approval");
}
