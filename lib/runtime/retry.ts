import { doublingDelayMs } from "@/lib/backoff";
import { setting } from "@/lib/env";

/** Exponential backoff with full jitter: spreads retries of many runs instead of stampeding the provider. */
export function backoffMs(attempt: number, baseMs = setting("SUPPORT_RETRY_BASE_MS"), capMs = 5 * 60_000): number {
  const ceiling = doublingDelayMs(attempt, baseMs, capMs);
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}
