import { defineConfig } from "@playwright/test";

// End-to-end runs use their own database on the same server (embedded, or DATABASE_URL's server), reset
// at start. Set here so the web server, the specs and the CLI the specs call all use it.
process.env.SUPPORT_DB_NAME ??= "support_e2e";
process.env.NEXT_TELEMETRY_DISABLED = "1";
const port = Number(process.env.E2E_PORT ?? 3100);
process.env.E2E_BASE_URL = `http://localhost:${port}`;

export default defineConfig({
  testDir: "e2e",
  testMatch: /.*\.spec\.ts/,
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 90_000,
  expect: { timeout: 20_000 },
  reporter: process.env.CI ? [["list"]] : [["list"], ["html", { open: "never" }]],
  use: {
    baseURL: `http://localhost:${port}`,
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    },
  },
  projects: [{ name: "chromium", use: { browserName: "chromium" } }],
  webServer: {
    command: "npx tsx scripts/start.ts --reset-db",
    url: `http://localhost:${port}/api/health`,
    env: { PORT: String(port), SUPPORT_DB_NAME: process.env.SUPPORT_DB_NAME!, SUPPORT_WORKER_INTERVAL_MS: "500", NEXTAUTH_URL: `http://localhost:${port}` },
    reuseExistingServer: false,
    // SIGTERM lets `npm start` stop the server and the embedded PostgreSQL it owns.
    gracefulShutdown: { signal: "SIGTERM", timeout: 15_000 },
    timeout: 240_000,
    stdout: "pipe",
    stderr: "pipe",
  },
});
