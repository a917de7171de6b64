// Every date the console shows goes through here, so the time zone they are shown in is decided in one place.
// Today that is the zone of the process rendering them (the server's for server pages, the browser's for live
// client views); pass `timeZone` to pin one.

export type DateInput = Date | string | number;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(kind: "when" | "day" | "time", timeZone?: string): Intl.DateTimeFormat {
  const key = `${kind}|${timeZone ?? ""}`;
  let f = formatters.get(key);
  if (!f) {
    const parts: Intl.DateTimeFormatOptions =
      kind === "day"
        ? { day: "numeric", month: "short", year: "numeric" }
        : kind === "time"
          ? { hour: "2-digit", minute: "2-digit", hourCycle: "h23" }
          : { day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23" };
    f = new Intl.DateTimeFormat("en-GB", { ...parts, ...(timeZone ? { timeZone } : {}) });
    formatters.set(key, f);
  }
  return f;
}

/** "1 Dec 2026, 10:42" */
export function formatWhen(at: DateInput, timeZone?: string): string {
  return formatter("when", timeZone).format(new Date(at));
}

/** "1 Dec 2026" */
export function formatDay(at: DateInput, timeZone?: string): string {
  return formatter("day", timeZone).format(new Date(at));
}

/** "10:42" */
export function formatTime(at: DateInput, timeZone?: string): string {
  return formatter("time", timeZone).format(new Date(at));
}

/** A calendar day as typed in a date field ("2026-12-01"), or null when it is not one. */
export function parseDay(raw: string): { y: number; m: number; d: number } | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(raw);
  if (!match) return null;
  const [y, m, d] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(y, m - 1, d));
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== m - 1 || date.getUTCDate() !== d) return null;
  return { y, m, d };
}

/** Whether `tz` is a time zone this runtime knows (an IANA name such as "Europe/Berlin", or "UTC"). */
export function isTimeZone(tz: string): boolean {
  if (!tz || tz.length > 64) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const offsetFormatters = new Map<string, Intl.DateTimeFormat>();

/** How far `tz` is ahead of UTC at the instant `at`, in milliseconds. */
function zoneOffsetMs(at: number, tz: string): number {
  let f = offsetFormatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: tz,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    offsetFormatters.set(tz, f);
  }
  const parts = f.formatToParts(new Date(at));
  const n = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  const asUtc = Date.UTC(n("year"), n("month") - 1, n("day"), n("hour"), n("minute"), n("second"));
  return asUtc - Math.floor(at / 1000) * 1000;
}

/** The instant a calendar day starts in `tz` (midnight there; across a DST change, the first instant of that day). */
export function zonedDayStart(y: number, m: number, d: number, tz = "UTC"): Date {
  const naive = Date.UTC(y, m - 1, d);
  if (tz === "UTC") return new Date(naive);
  // Two passes: the offset at the first guess can differ from the offset at the answer around a DST change.
  let at = naive - zoneOffsetMs(naive, tz);
  at = naive - zoneOffsetMs(at, tz);
  return new Date(at);
}

/** The calendar day an instant falls on in `tz`, as "2026-12-01". */
export function dayIn(at: DateInput, tz = "UTC"): string {
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" }).formatToParts(
    new Date(at),
  );
  const v = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
  return `${v("year")}-${v("month")}-${v("day")}`;
}

/** "2026-12-01" moved by `n` calendar days. */
export function addDays(day: string, n: number): string {
  const p = parseDay(day);
  if (!p) throw new Error(`not a day: ${day}`);
  return new Date(Date.UTC(p.y, p.m - 1, p.d + n)).toISOString().slice(0, 10);
}

/**
 * The instants a range of calendar days covers, `from` at 00:00 up to the end of `to` (exclusive upper
 * bound), for a date-range filter. Days are read in `tz` (the viewer's zone when the page knows it), else UTC.
 */
export function dayRange(from?: string, to?: string, tz = "UTC"): { gte?: Date; lt?: Date } {
  const out: { gte?: Date; lt?: Date } = {};
  const a = from ? parseDay(from) : null;
  const b = to ? parseDay(to) : null;
  if (a) out.gte = zonedDayStart(a.y, a.m, a.d, tz);
  if (b) {
    const next = new Date(Date.UTC(b.y, b.m - 1, b.d + 1));
    out.lt = zonedDayStart(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), tz);
  }
  return out;
}
