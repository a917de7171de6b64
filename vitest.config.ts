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
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
