/**
 * The production build as `npm start` and `npm run load` use it: rebuilt only when missing or older than the
 * sources, with the same next-auth secret every process of this checkout shares.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { projectRoot } from "@/lib/db/server";
import type { Env } from "@/lib/env";

const root = projectRoot();
export const nextBin = path.join(root, "node_modules", "next", "dist", "bin", "next");

/**
 * V8's young generation for the web server, in MiB per semi-space (V8's default is 16). A request leaves mostly
 * short-lived garbage (parsed bodies, rows, JSON); with a larger young generation fewer of it survives to be copied.
 * In `npm run load` (3 Dec, CPU profiles of both web processes) 64 cut the garbage collector's CPU from 5.1 / 4.9 s
 * to 3.1 / 3.0 s per process. The cost is memory: the young generation is three semi-spaces, so up to 144 MiB more
 * heap per process than the default. A `--max-semi-space-size` in NODE_OPTIONS wins.
 */
const WEB_SEMI_SPACE_MB = 64;

/**
 * How long the web server keeps an idle connection open, in ms (Node's default is 5 s). A client that keeps
 * connections alive — a load balancer, a proxy, Playwright's request context — can send a request on one just as
 * the server closes it, and that request fails with ECONNRESET (CI, 6 Dec: the console's runs API). Longer than
 * common proxies keep theirs (60 s), so they close first; e2e/server-keep-alive.spec.ts holds it.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** The arguments of `node` that start the production web server on `port` (`npm start`, the load run). */
export function nextStartArgs(port: number | string): string[] {
  const ownSetting = process.env.NODE_OPTIONS?.includes("--max-semi-space-size");
  return [
    ...(ownSetting ? [] : [`--max-semi-space-size=${WEB_SEMI_SPACE_MB}`]),
    nextBin,
    "start",
    "-p",
    String(port),
    "--keepAliveTimeout",
    String(KEEP_ALIVE_TIMEOUT_MS),
  ];
}

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

export function buildIsStale(): boolean {
  const buildId = path.join(root, ".next", "BUILD_ID");
  if (!fs.existsSync(buildId)) return true;
  const built = fs.statSync(buildId).mtimeMs;
  const sources = [
    "app",
    "components",
    "lib",
    "public",
    "next.config.mjs",
    "package.json",
    "instrumentation.ts",
    "proxy.ts",
    "postcss.config.mjs",
    "tsconfig.json",
  ];
  return sources.some((s) => newestMtime(path.join(root, s)) > built);
}

/** Runs `next build` when the build is missing or stale; `label` prefixes the line saying so. */
export function buildIfStale(childEnv: NodeJS.ProcessEnv, label: string): void {
  if (!buildIsStale()) return;
  console.log(`[${label}] building the app (next build)…`);
  const built = spawnSync(process.execPath, [nextBin, "build"], { cwd: root, env: childEnv, stdio: "inherit" });
  if (built.status !== 0) throw new Error(`next build failed with exit code ${built.status}`);
}

/** A stable secret for next-auth when none is configured, kept with the local data. */
export function nextAuthSecret(config: Env): string {
  if (config.NEXTAUTH_SECRET) return config.NEXTAUTH_SECRET;
  const file = path.join(root, ".data", "nextauth-secret");
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, randomBytes(32).toString("base64url"), { mode: 0o600 });
  }
  return fs.readFileSync(file, "utf8").trim();
}
