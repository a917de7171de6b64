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
] as const;
export type Failpoint = (typeof FAILPOINTS)[number];

export function failpoint(name: Failpoint): void {
  if (process.env.SUPPORT_FAILPOINT === name) {
    process.stderr.write(`[failpoint] crashing at ${name}\n`);
    process.exit(86);
  }
}
