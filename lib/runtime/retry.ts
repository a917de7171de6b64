import { setting } from "@/lib/env";

/** Exponential backoff with full jitter: spreads retries of many runs instead of stampeding the provider. */
export function backoffMs(attempt: number, baseMs = setting("SUPPORT_RETRY_BASE_MS"), capMs = 5 * 60_000): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}
