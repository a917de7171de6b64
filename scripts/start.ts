/**
 * `npm start`: one command from a fresh clone to a running product. Makes the database ready (the embedded
 * PostgreSQL by default, started and owned by this process; DATABASE_URL for any other), builds the app if
 * the build is missing or older than the sources, then serves it with an in-process worker.
 *
 *   npm start                      # http://localhost:3000
 *   PORT=3100 npm start
 *   npm start -- --reset-db        # drop and recreate the database first (end-to-end tests)
 *
 * The environment is checked first (lib/env.ts): a bad variable stops here with one message naming each.
 * Ctrl-C stops the server, then the embedded PostgreSQL this process started.
 */
import { spawn } from "node:child_process";
import { buildIfStale, nextAuthSecret, nextStartArgs } from "./app-build";
import { prepareDatabase } from "@/lib/setup/prepare";
import { resetDatabase } from "@/lib/db/reset";
import { isEmbeddedUnavailable, stopEmbeddedIfOwner, projectRoot } from "@/lib/db/server";
import { env } from "@/lib/env";

const root = projectRoot();

async function main() {
  const config = env();
  const port = String(config.PORT);
  if (process.argv.includes("--reset-db")) await resetDatabase();
  const db = await prepareDatabase();
  console.log(
    `[start] database ready (${config.DATABASE_URL ? "DATABASE_URL" : "embedded PostgreSQL in .data/pg"}); migrations applied now: ${db.applied.length}; demo data loaded now: ${db.seeded}`,
  );
  const childEnv = {
    ...process.env,
    NEXT_TELEMETRY_DISABLED: "1",
    NEXTAUTH_URL: config.NEXTAUTH_URL ?? `http://localhost:${port}`,
    NEXTAUTH_SECRET: nextAuthSecret(config),
  };
  buildIfStale(childEnv, "start");
  console.log(`[start] serving on http://localhost:${port} (model: ${config.ANTHROPIC_API_KEY ? "Claude" : "offline model"})`);
  const server = spawn(process.execPath, nextStartArgs(port), { cwd: root, env: childEnv, stdio: "inherit" });
  const stop = () => server.kill("SIGTERM");
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const code: number = await new Promise((resolve) => server.on("exit", (c) => resolve(c ?? 0)));
  await stopEmbeddedIfOwner({ waitForUsersMs: 10_000 });
  process.exit(code);
}

main().catch(async (err) => {
  // The embedded server's "cannot run here" is already one sentence saying what to do.
  console.error(isEmbeddedUnavailable(err) ? err.message : `[start] failed: ${err instanceof Error ? err.message : String(err)}`);
  await stopEmbeddedIfOwner().catch(() => undefined);
  process.exit(1);
});
