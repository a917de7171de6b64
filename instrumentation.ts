/**
 * Runs once when the Next.js server starts: makes the database ready (migrations, demo seed on an empty
 * database) and starts the in-process worker that resumes approved, retried and abandoned runs and expires
 * approvals. Set SUPPORT_IN_PROCESS_WORKER=0 to run workers as separate processes (`npm run worker`).
 */
export async function register() {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { prepareDatabase } = await import("@/lib/db/prepare");
  await prepareDatabase();
  if (process.env.SUPPORT_IN_PROCESS_WORKER === "0") return;
  const { getRuntime } = await import("@/lib/runtime/shared-runtime");
  const { runWorker } = await import("@/lib/runtime/worker");
  const runtime = await getRuntime();
  void runWorker(runtime, { intervalMs: Number(process.env.SUPPORT_WORKER_INTERVAL_MS ?? 1000) });
}
