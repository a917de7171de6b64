import { setting } from "@/lib/env";

/**
 * Named crash points between claiming a run and recording its effect. Tests run a worker process with
 * SUPPORT_FAILPOINT=<name> and it dies there abruptly (no cleanup, no finally), like a kill -9; another
 * worker must then finish the run with exactly one effect.
 */
export const FAILPOINTS = [
  "after-claim",
  "after-model-response",
  "after-gate",
  "before-effect",
  "after-effect",
  "after-results-appended",
  "after-specialist-calls",
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

/** `SUPPORT_FAILPOINT=before-effect` crashes at the first such point; `before-effect:refund_order` only there for that tool. */
export function failpoint(name: Failpoint, detail?: string): void {
  const armed = setting("SUPPORT_FAILPOINT");
  if (!armed) return;
  if (armed === name || (detail !== undefined && armed === `${name}:${detail}`)) {
    process.stderr.write(`[failpoint] crashing at ${armed}\n`);
    process.exit(86);
  }
}
