"use client";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { useEffect, useRef, useState } from "react";
import { Notice } from "@/components/ui/notice";
import { cx } from "@/components/ui/cx";
import { getJson } from "@/components/console/api";
import { AgeClock, ExpiryClock } from "@/components/console/clocks";
import { FeedIndicator } from "@/components/console/feed-indicator";
import { consoleKeys } from "@/components/console/query-keys";
import { HandoffStatusBadge, KindBadge, handoffTitle } from "@/components/console/status";
import { useLiveEvents } from "@/components/console/use-live-events";
import { useNow } from "@/components/console/use-now";
import { useShortcuts } from "@/components/console/use-shortcuts";
import { decidedSummary } from "@/lib/console/decision-words";
import { queueFilterToParams, type QueueFilter } from "@/lib/console/filters";
import { formatCents } from "@/lib/money";
import type { QueueItem } from "@/lib/console/queries";
import { QueueFilters } from "./queue-filters";

/**
 * The live queue. Filters live in the URL; the list refetches when the event feed reports a handoff change.
 * Keyboard: j / k move the selection, Enter opens the selected item.
 */
export function QueueView({
  initialItems,
  initialFilter,
  initialCursor,
  me,
}: {
  initialItems: QueueItem[];
  initialFilter: QueueFilter;
  initialCursor: string;
  me: { staffId: string; authorityLimitCents: number | null };
}) {
  const router = useRouter();
  const [filter, setFilter] = useState(initialFilter);
  const key = queueFilterToParams(filter).toString();
  const initialKey = useRef(queueFilterToParams(initialFilter).toString());
  const query = useQuery({
    queryKey: consoleKeys.queue(key),
    queryFn: ({ signal }) => getJson<QueueItem[]>(`/api/console/queue?${key}`, signal),
    initialData: key === initialKey.current ? initialItems : undefined,
    placeholderData: keepPreviousData,
  });
  // Only what can change the queue answers its long poll: not every message of the shop.
  const feed = useLiveEvents({ initialCursor, topic: "queue" });
  const now = useNow();
  const items = query.data ?? [];

  // Keep the URL in step with the filters, without a server round trip.
  useEffect(() => {
    window.history.replaceState(window.history.state, "", `/console${key ? `?${key}` : ""}`);
  }, [key]);

  const [selected, setSelected] = useState(0);
  const links = useRef<Array<HTMLAnchorElement | null>>([]);
  const clamped = Math.min(selected, Math.max(items.length - 1, 0));
  const move = (delta: number) => {
    if (!items.length) return;
    const next = Math.max(0, Math.min(items.length - 1, clamped + delta));
    setSelected(next);
    links.current[next]?.focus();
    links.current[next]?.scrollIntoView({ block: "nearest" });
  };
  useShortcuts({
    j: () => move(1),
    k: () => move(-1),
    Enter: (e) => {
      // A focused link or button already handles Enter itself.
      if (e.target instanceof HTMLAnchorElement || e.target instanceof HTMLButtonElement) return false;
      const item = items[clamped];
      if (item) router.push(`/console/handoffs/${item.id}`);
    },
  });

  return (
    <div className="space-y-4">
      <div className="flex flex-wrap items-end justify-between gap-3">
        <div>
          <h1 className="text-xl font-semibold">Queue</h1>
          <p className="text-sm text-slate-600">
            <kbd className="rounded border px-1">j</kbd> / <kbd className="rounded border px-1">k</kbd> move,{" "}
            <kbd className="rounded border px-1">Enter</kbd> opens. Claim an item before working on it.
          </p>
        </div>
        <FeedIndicator state={feed} />
      </div>

      <QueueFilters value={filter} onChange={setFilter} />

      <p role="status" className="text-sm text-slate-700" data-testid="queue-count">
        {query.isFetching && !query.data ? "Loading…" : `${items.length} ${items.length === 1 ? "item" : "items"}`}
      </p>
      {query.isError ? <Notice tone="error">{(query.error as Error).message}</Notice> : null}

      {items.length === 0 ? (
        <p className="rounded-lg border border-dashed border-slate-300 bg-white p-8 text-center text-sm text-slate-600">
          Nothing here. New items appear on their own.
        </p>
      ) : (
        <ol aria-label="Handoffs" className="space-y-2">
          {items.map((h, i) => {
            const isSelected = i === clamped;
            const claimedByMe = h.claimedBy?.id === me.staffId;
            // Said before the item is opened: the reviewer learns it here, not from a refusal.
            const overAuthority =
              h.status === "PENDING" &&
              h.kind === "APPROVAL" &&
              h.amountCents !== null &&
              me.authorityLimitCents !== null &&
              h.amountCents > me.authorityLimitCents;
            return (
              <li key={h.id}>
                <Link
                  ref={(el) => {
                    links.current[i] = el;
                  }}
                  href={`/console/handoffs/${h.id}`}
                  onFocus={() => setSelected(i)}
                  data-testid="queue-item"
                  data-handoff-id={h.id}
                  data-selected={isSelected || undefined}
                  aria-current={isSelected ? "true" : undefined}
                  className={cx(
                    "block rounded-lg border bg-white p-3 shadow-sm hover:border-blue-400",
                    isSelected ? "border-blue-500 ring-2 ring-blue-200" : "border-slate-200",
                  )}
                >
                  <div className="flex flex-wrap items-center gap-2">
                    <KindBadge kind={h.kind} />
                    {h.status !== "PENDING" ? <HandoffStatusBadge status={h.status} /> : null}
                    <span className="font-medium text-slate-900">{handoffTitle(h)}</span>
                    {h.amount ? <span className="ml-auto font-semibold tabular-nums">{h.amount}</span> : null}
                  </div>
                  {overAuthority ? (
                    <p className="mt-1 text-sm font-medium text-amber-900" data-testid="queue-over-authority">
                      Over your authority ({formatCents(me.authorityLimitCents!)})
                    </p>
                  ) : null}
                  <p className="mt-1 text-sm text-slate-700">
                    {h.customer ? `${h.customer.name} (${h.customer.email})` : "Anonymous visitor"}
                    {h.orderNumber ? ` · order ${h.orderNumber}` : ""}
                  </p>
                  <p className="mt-0.5 line-clamp-1 text-sm text-slate-600">Asked: {h.summary}</p>
                  <div className="mt-2 flex flex-wrap items-center gap-2 text-xs">
                    {h.status === "PENDING" ? <AgeClock since={h.createdAt} now={now} /> : null}
                    {h.status === "PENDING" && h.kind === "APPROVAL" && h.expiresAt ? <ExpiryClock at={h.expiresAt} now={now} /> : null}
                    {h.requiredApprovals > 1 ? (
                      <span className="text-slate-700">
                        {h.approvals.length} of {h.requiredApprovals} approvals
                      </span>
                    ) : null}
                    <span
                      className={cx("ml-auto", h.status === "PENDING" && h.claimedBy ? "font-medium text-slate-900" : "text-slate-600")}
                      data-testid="queue-claim"
                    >
                      {h.status !== "PENDING"
                        ? decidedSummary(h)
                        : h.claimedBy
                          ? claimedByMe
                            ? "Claimed by you"
                            : `Claimed by ${h.claimedBy.name ?? "another reviewer"}`
                          : "Unclaimed"}
                    </span>
                  </div>
                </Link>
              </li>
            );
          })}
        </ol>
      )}
    </div>
  );
}
