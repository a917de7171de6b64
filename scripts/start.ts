/**
 * `npm start`: one command from a fresh clone to a running product. Makes the database ready (the embedded
 * PostgreSQL by default, started and owned by this process; DATABASE_URL for any other), builds the app if
 * the build is missing or older than the sources, then serves it with an in-process worker.
 *
 *   npm start                      # http://localhost:3000
 *   PORT=3100 npm start
 *   npm start -- --reset-db        # drop and recreate the database first (end-to-end tests)
 */
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { prepareDatabase } from "@/lib/db/prepare";
import { resetDatabase } from "@/lib/db/reset";
import { stopEmbeddedIfOwner, projectRoot } from "@/lib/db/server";

const root = projectRoot();
const nextBin = path.join(root, "node_modules", "next", "dist", "bin", "next");
const port = process.env.PORT ?? "3000";

function newestMtime(p: string): number {
  if (!fs.existsSync(p)) return 0;
  const stat = fs.statSync(p);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of fs.readdirSync(p)) {
    if (entry === "node_modules" || entry === "generated" || entry.startsWith(".")) continue;
    newest = Math.max(newest, newestMtime(path.join(p, entry)));
  }
  return newest;
}

function buildIsStale(): boolean {
  const buildId = path.join(root, ".next", "BUILD_ID");
  if (!fs.existsSync(buildId)) return true;
  const built = fs.statSync(buildId).mtimeMs;
  const sources = ["app", "components", "lib", "public", "next.config.mjs", "package.json", "instrumentation.ts", "proxy.ts", "postcss.config.mjs", "tsconfig.json"];
  return sources.some((s) => newestMtime(path.join(root, s)) > built);
}

/** A stable secret for next-auth when none is configured, kept with the local data. */
function nextAuthSecret(): string {
  if (process.env.NEXTAUTH_SECRET) return process.env.NEXTAUTH_SECRET;
  const file = path.join(root, ".data", "nextauth-secret");
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, randomBytes(32).toString("base64url"), { mode: 0o600 });
  }
  return fs.readFileSync(file, "utf8").trim();
}

async function main() {
  if (process.argv.includes("--reset-db")) await resetDatabase();
  const db = await prepareDatabase();
  console.log(`[start] database ready (${process.env.DATABASE_URL ? "DATABASE_URL" : "embedded PostgreSQL in .data/pg"}); migrations applied now: ${db.applied.length}; demo data loaded now: ${db.seeded}`);
  const env = {
    ...process.env,
    NEXT_TELEMETRY_DISABLED: "1",
    NEXTAUTH_URL: process.env.NEXTAUTH_URL ?? `http://localhost:${port}`,
    NEXTAUTH_SECRET: nextAuthSecret(),
  };
  if (buildIsStale()) {
    console.log("[start] building the app (next build)…");
    const built = spawnSync(process.execPath, [nextBin, "build"], { cwd: root, env, stdio: "inherit" });
    if (built.status !== 0) throw new Error(`next build failed with exit code ${built.status}`);
  }
  console.log(`[start] serving on http://localhost:${port} (model: ${process.env.ANTHROPIC_API_KEY ? "Claude" : "offline model"})`);
  const server = spawn(process.execPath, [nextBin, "start", "-p", port], { cwd: root, env, stdio: "inherit" });
  const stop = () => server.kill("SIGTERM");
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const code: number = await new Promise((resolve) => server.on("exit", (c) => resolve(c ?? 0)));
  await stopEmbeddedIfOwner({ waitForUsersMs: 10_000 });
  process.exit(code);
}

main().catch(async (err) => {
  console.error("[start] failed:", err instanceof Error ? err.message : err);
  await stopEmbeddedIfOwner().catch(() => undefined);
  process.exit(1);
});
