"use client";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { useEffect, useState } from "react";
import { Input } from "@/components/ui/field";

/** The browser's time zone (the viewer's), or UTC when it cannot say. */
function browserZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

/**
 * The period: presets (7 / 30 / 90 days) and a custom range, read in the viewer's time zone. The server cannot know
 * the zone, so the page carries it in the URL (?tz=…): a first visit without one is replaced by the same page with
 * the browser's zone, and every link and form here keeps it.
 */
export function PeriodForm({ preset, from, to, tz }: { preset: number | null; from: string; to: string; tz: string | null }) {
  const router = useRouter();
  const pathname = usePathname();
  const params = useSearchParams();
  const [zone, setZone] = useState(tz ?? "UTC");
  useEffect(() => {
    const mine = browserZone();
    setZone(tz ?? mine);
    if (!tz) {
      const next = new URLSearchParams(params.toString());
      next.set("tz", mine);
      router.replace(`${pathname}?${next}`);
    }
  }, [tz, params, pathname, router]);

  const presetHref = (days: number) => `${pathname}?${new URLSearchParams({ days: String(days), tz: zone })}`;
  return (
    <div className="flex flex-wrap items-end gap-4 rounded-lg border border-slate-200 bg-white p-3" data-testid="period">
      <nav aria-label="Period presets">
        <ul className="flex gap-1 text-sm">
          {[7, 30, 90].map((d) => (
            <li key={d}>
              <a
                href={presetHref(d)}
                aria-current={preset === d ? "page" : undefined}
                className={`rounded-md px-3 py-2 ${preset === d ? "bg-blue-700 text-white" : "border border-slate-300 text-slate-800 hover:bg-slate-100"}`}
              >
                Last {d} days
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <form method="get" action={pathname} className="flex flex-wrap items-end gap-2" aria-label="Custom period">
        <div>
          <label htmlFor="metrics-from" className="block text-sm font-medium">
            From
          </label>
          <Input id="metrics-from" name="from" type="date" defaultValue={preset ? "" : from} required />
        </div>
        <div>
          <label htmlFor="metrics-to" className="block text-sm font-medium">
            To
          </label>
          <Input id="metrics-to" name="to" type="date" defaultValue={preset ? "" : to} required />
        </div>
        <input type="hidden" name="tz" value={zone} />
        <button type="submit" className="rounded-md bg-blue-700 px-3.5 py-2 text-sm font-medium text-white hover:bg-blue-800">
          Show
        </button>
      </form>
      <p className="text-xs text-slate-600">
        Days in <span data-testid="period-zone">{zone}</span>
      </p>
    </div>
  );
}
