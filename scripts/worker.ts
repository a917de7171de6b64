/** `npm run worker`: a separate worker process (any number may run beside the web servers). */
import { prepareDatabase } from "@/lib/db/prepare";
import { createRuntime } from "@/lib/runtime/create-runtime";
import { runWorker, runWorkerOnce } from "@/lib/runtime/worker";
import { disconnectPrisma } from "@/lib/db/client";
import { stopEmbeddedIfOwner } from "@/lib/db/server";

async function main() {
  await prepareDatabase();
  const runtime = await createRuntime({ role: "worker" });
  if (process.argv.includes("--once")) {
    console.log(JSON.stringify(await runWorkerOnce(runtime)));
    return;
  }
  const stop = new AbortController();
  process.on("SIGINT", () => stop.abort());
  process.on("SIGTERM", () => stop.abort());
  console.log(`[worker] ${runtime.workerId} polling (model: ${runtime.model.mode})`);
  await runWorker(runtime, { signal: stop.signal });
}

main()
  .catch((err) => {
    console.error("[worker] failed:", err);
    process.exitCode = 1;
  })
  .finally(async () => {
    await disconnectPrisma().catch(() => undefined);
    await stopEmbeddedIfOwner().catch(() => undefined);
    process.exit(process.exitCode ?? 0);
  });
