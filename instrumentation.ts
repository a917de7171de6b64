/**
 * Runs once when the Next.js server starts: checks the environment (lib/env.ts), starts tracing when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, makes the database ready (migrations, demo seed on an empty database) and
 * starts the in-process worker that resumes approved, retried and abandoned runs and expires approvals.
 * Set SUPPORT_IN_PROCESS_WORKER=0 to run workers as separate processes (`npm run worker`).
 * If the database is unreachable at that moment the server starts anyway (requests answer 503, health says
 * so) and the worker starts once the database is back.
 */
export async function register() {
  // Set by Next.js itself; read directly because this module also loads in the edge runtime.
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { env } = await import("@/lib/env");
  const { log } = await import("@/lib/log");
  let config: ReturnType<typeof env>;
  try {
    config = env();
  } catch (err) {
    log.fatal({ err }, "invalid environment");
    throw err;
  }
  const { startTracing } = await import("@/lib/telemetry/sdk");
  startTracing();
  const { prepareDatabase, prepareDatabaseWhenReachable } = await import("@/lib/setup/prepare");
  const { noteDatabaseFailure } = await import("@/lib/db/outage");
  const readyNow = await prepareDatabase().then(
    () => true,
    (err: unknown) => {
      if (!noteDatabaseFailure(err, "startup")) throw err; // a real error stops the server, as before
      return false;
    },
  );
  if (!config.SUPPORT_IN_PROCESS_WORKER) return;
  const startWorker = async () => {
    const { getRuntime } = await import("@/lib/runtime/shared-runtime");
    const { runWorker } = await import("@/lib/runtime/worker");
    const runtime = await getRuntime();
    log.info({ workerId: runtime.workerId, model: runtime.model.mode }, "in-process worker started");
    void runWorker(runtime, { intervalMs: config.SUPPORT_WORKER_INTERVAL_MS });
  };
  if (readyNow) await startWorker();
  else
    void prepareDatabaseWhenReachable()
      .then(startWorker)
      .catch((err: unknown) => log.error({ err }, "in-process worker not started: the database could not be prepared"));
}
