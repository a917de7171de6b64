"use client";
import { useSyncExternalStore } from "react";
import { formatMoment, isoOf, type TimeStyle } from "@/lib/time";

const noSubscription = () => () => {};

/**
 * The time zone to format in: UTC on the server and during hydration (so the browser's first render matches the
 * server's HTML exactly), then the viewer's own (undefined = the browser's zone and locale). React re-renders
 * once after hydration because the client snapshot differs from the server one.
 */
export function useViewerTimeZone(): { timeZone?: string; locale?: string } {
  const hydrated = useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  );
  return hydrated ? {} : { timeZone: "UTC", locale: "en-US" };
}

/** A moment shown in the viewer's time zone, inside `<time dateTime="…">` carrying the exact instant. */
export function LocalTime({ at, style = "datetime", className }: { at: string | Date; style?: TimeStyle; className?: string }) {
  const zone = useViewerTimeZone();
  const iso = isoOf(at);
  return (
    <time dateTime={iso} title={iso} className={className}>
      {formatMoment(at, style, zone)}
    </time>
  );
}
