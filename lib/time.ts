/**
 * How the product shows a moment: one formatter for the console and the widget. Dates travel as ISO strings
 * (UTC); they are shown in the viewer's time zone by `<LocalTime>` (components/ui/local-time.tsx), which renders
 * them in UTC on the server and again in the browser's zone once hydrated.
 */
export type TimeStyle = "datetime" | "time" | "date";

const PARTS: Record<TimeStyle, Intl.DateTimeFormatOptions> = {
  datetime: { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit" },
  time: { hour: "numeric", minute: "2-digit" },
  date: { year: "numeric", month: "short", day: "numeric" },
};

/**
 * `at` as text in `timeZone` (default: the runtime's own — the viewer's, in a browser). A zone other than the
 * viewer's is named ("… UTC") so a server-rendered time is never mistaken for local time. Invalid → "".
 */
export function formatMoment(at: string | Date, style: TimeStyle = "datetime", opts: { timeZone?: string; locale?: string } = {}): string {
  const date = at instanceof Date ? at : new Date(at);
  if (Number.isNaN(date.getTime())) return "";
  const options: Intl.DateTimeFormatOptions = { ...PARTS[style] };
  if (options.hour) options.hour = hourDigits(opts.locale);
  if (opts.timeZone) {
    options.timeZone = opts.timeZone;
    if (style !== "date") options.timeZoneName = "short";
  }
  return new Intl.DateTimeFormat(opts.locale, options).format(date);
}

const hourDigitsByLocale = new Map<string, "2-digit" | "numeric">();

/** A 24-hour clock reads "02:05", a 12-hour one "2:05 AM": the hour's digits follow the locale's own clock. */
function hourDigits(locale: string | undefined): "2-digit" | "numeric" {
  const key = locale ?? "";
  let digits = hourDigitsByLocale.get(key);
  if (!digits) {
    const cycle = new Intl.DateTimeFormat(locale, { hour: "numeric" }).resolvedOptions().hourCycle;
    digits = cycle === "h23" || cycle === "h24" ? "2-digit" : "numeric";
    hourDigitsByLocale.set(key, digits);
  }
  return digits;
}

/** The ISO form of `at` (what `<time dateTime>` carries). */
export function isoOf(at: string | Date): string {
  const date = at instanceof Date ? at : new Date(at);
  return Number.isNaN(date.getTime()) ? String(at) : date.toISOString();
}
