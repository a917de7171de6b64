/** Age of an open item: green while fresh, amber once it waits longer than it should, red when overdue. */
export const SLA_AMBER_MS = 15 * 60_000;
export const SLA_RED_MS = 60 * 60_000;
/** Time to expiry below which an approval is flagged as about to lapse. */
export const EXPIRY_WARN_MS = 60 * 60_000;

export type SlaLevel = "ok" | "warn" | "late";

export function slaLevel(ageMs: number): SlaLevel {
  return ageMs < SLA_AMBER_MS ? "ok" : ageMs < SLA_RED_MS ? "warn" : "late";
}

/** "45 s", "12 min", "3 h 5 min", "2 d 4 h" — compact, for clocks that tick. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}
