/** `npm run worker`: a separate worker process (any number may run beside the web servers). */
import { prepareDatabase, prepareDatabaseWhenReachable } from "@/lib/setup/prepare";
import { createRuntime } from "@/lib/runtime/create-runtime";
import { runWorker, runWorkerOnce } from "@/lib/runtime/worker";
import { disconnectPrisma } from "@/lib/db/client";
import { isEmbeddedUnavailable, stopEmbeddedIfOwner } from "@/lib/db/server";
import { AppError } from "@/lib/errors";
import { env } from "@/lib/env";
import { log } from "@/lib/log";
import { activeTracing, startTracing } from "@/lib/telemetry/sdk";

async function main() {
  env(); // a bad variable stops the worker here, with one message naming each
  startTracing();
  const stop = new AbortController();
  process.on("SIGINT", () => stop.abort());
  process.on("SIGTERM", () => stop.abort());
  const once = process.argv.includes("--once");
  // A polling worker started while the database is down (or restarting) waits for it instead of exiting.
  await (once ? prepareDatabase() : prepareDatabaseWhenReachable(stop.signal));
  const runtime = await createRuntime({ role: "worker" });
  if (once) {
    console.log(JSON.stringify(await runWorkerOnce(runtime)));
    return;
  }
  log.info({ workerId: runtime.workerId, model: runtime.model.mode }, "worker polling");
  await runWorker(runtime, { signal: stop.signal });
}

main()
  .catch((err) => {
    // The environment check's message and the embedded server's "cannot run here" are for a person: printed as
    // they are, not as a stack.
    if (err instanceof AppError || isEmbeddedUnavailable(err)) process.stderr.write(`[worker] ${err.message}\n`);
    else log.fatal({ err }, "worker failed");
    process.exitCode = 1;
  })
  .finally(async () => {
    await activeTracing()
      ?.shutdown()
      .catch(() => undefined);
    await disconnectPrisma().catch(() => undefined);
    await stopEmbeddedIfOwner().catch(() => undefined);
    process.exit(process.exitCode ?? 0);
  });
