"use client";
import { Badge } from "@/components/ui/badge";
import { useViewerTimeZone } from "@/components/ui/local-time";
import { EXPIRY_WARN_MS, formatDuration, slaLevel } from "@/lib/console/sla";
import { formatMoment } from "@/lib/time";

const SLA_TEXT = { ok: "on time", warn: "waiting long", late: "overdue" } as const;
const SLA_TONE = { ok: "green", warn: "amber", late: "red" } as const;

/** How long an open item has waited, coloured by the SLA (green < 15 min, amber < 1 h, red after). */
export function AgeClock({ since, now }: { since: string; now: number }) {
  const age = now - new Date(since).getTime();
  const level = slaLevel(age);
  const zone = useViewerTimeZone();
  return (
    <Badge tone={SLA_TONE[level]} data-sla={level} title={`Waiting since ${formatMoment(since, "datetime", zone)}`}>
      <span suppressHydrationWarning>{formatDuration(age)}</span>
      <span className="sr-only">waiting, {SLA_TEXT[level]}</span>
      <span aria-hidden="true">· {SLA_TEXT[level]}</span>
    </Badge>
  );
}

/** Time left before an approval expires (and resolves as "expired", which the customer is told). */
export function ExpiryClock({ at, now }: { at: string; now: number }) {
  const left = new Date(at).getTime() - now;
  const zone = useViewerTimeZone();
  if (left <= 0) return <Badge tone="red">expired</Badge>;
  return (
    <Badge tone={left < EXPIRY_WARN_MS ? "red" : "gray"} title={`Expires ${formatMoment(at, "datetime", zone)}`}>
      <span>expires in </span>
      <span suppressHydrationWarning>{formatDuration(left)}</span>
    </Badge>
  );
}
