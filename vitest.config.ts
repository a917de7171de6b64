import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@\//, replacement: `${root}/` },
      // Next.js's guard module throws outside a server bundle; tests import server code directly.
      { find: /^server-only$/, replacement: path.join(root, "test", "server-only-stub.ts") },
    ],
  },
  test: {
    // Only unit/integration tests; Playwright specs live elsewhere and must not be collected.
    include: ["lib/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    // Generous: several suites start worker processes (tsx) and PostgreSQL servers, which on a loaded 2-core machine
    // take a while (a crash test once needed 31 s there); a hung test still fails.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Each file has its own database (test/db.ts) and the suites mostly wait on PostgreSQL, timers and child
    // processes: three files at a time on a 2-core machine (Vitest's default would be one: cores − 1).
    maxWorkers: Number(process.env.VITEST_MAX_WORKERS ?? 3),
    // The JSON logs of code under test: warnings and errors only, unless LOG_LEVEL asks for more.
    env: {
      LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
      // The offline model streams without pauses under test (its "typing" pace is for people watching).
      SUPPORT_OFFLINE_STREAM_PACE_MS: process.env.SUPPORT_OFFLINE_STREAM_PACE_MS ?? "0",
      // Test receivers listen on 127.0.0.1 (lib/webhooks/target.test.ts checks the refusal with "deny").
      SUPPORT_WEBHOOK_PRIVATE_TARGETS: "allow",
    },
  },
});
