import { defineConfig } from "@playwright/test";

// End-to-end runs use their own database on the same server (embedded, or DATABASE_URL's server), reset
// at start. Set here so the web server, the specs and the CLI the specs call all use it.
process.env.SUPPORT_DB_NAME ??= "support_e2e";
process.env.NEXT_TELEMETRY_DISABLED = "1";
const port = Number(process.env.E2E_PORT ?? 3100);
process.env.E2E_BASE_URL = `http://localhost:${port}`;

// Specs that start a server of their own reset and seed its database on the same PostgreSQL server, in long write
// transactions. While one is open, no database on that server lets its event feed read past it (an event is read only
// once every older transaction has ended, lib/store/events.ts), so the live updates the other specs wait for could
// come a heartbeat (10 s) late or more. These run after the others, and one at a time.
const OWN_SERVER = /widget-(limits|specialist|streaming)\.spec\.ts$/;

export default defineConfig({
  testDir: "e2e",
  testMatch: /.*\.spec\.ts/,
  // Two spec files run side by side on the one web server and database (tests inside a file stay in order). Every
  // spec works on its own customers, orders, handoffs and runs and scopes what it counts to them; a spec that changes
  // what others rely on brings its own shop (admin-settings: a new policy version) or its own server and database
  // (OWN_SERVER). `--workers 1` runs the files one at a time.
  fullyParallel: false,
  workers: 2,
  retries: 0,
  // Generous: on a slow 2-core machine a spec with three signed-in browsers took over 90 s (not hung; each step slow).
  timeout: 180_000,
  expect: { timeout: 20_000 },
  reporter: process.env.CI ? [["list"]] : [["list"], ["html", { open: "never" }]],
  use: {
    baseURL: `http://localhost:${port}`,
    // Dates are shown in the viewer's locale and zone; the specs read them as a British reader in UTC unless a
    // spec says otherwise (CI's Chromium and a developer's may default to different locales).
    locale: "en-GB",
    timezoneId: "UTC",
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    },
  },
  projects: [
    { name: "chromium", use: { browserName: "chromium" }, testIgnore: OWN_SERVER },
    // After the others (a failure there skips these; `--no-deps` runs them alone), one file at a time.
    { name: "own-server", use: { browserName: "chromium" }, testMatch: OWN_SERVER, dependencies: ["chromium"], workers: 1 },
  ],
  webServer: {
    command: "npx tsx scripts/start.ts --reset-db",
    url: `http://localhost:${port}/api/health`,
    env: {
      PORT: String(port),
      SUPPORT_DB_NAME: process.env.SUPPORT_DB_NAME!,
      SUPPORT_WORKER_INTERVAL_MS: "500",
      // The webhook spec's receiver listens on 127.0.0.1.
      SUPPORT_WEBHOOK_PRIVATE_TARGETS: "allow",
      NEXTAUTH_URL: `http://localhost:${port}`,
    },
    reuseExistingServer: false,
    // SIGTERM lets `npm start` stop the server and the embedded PostgreSQL it owns.
    gracefulShutdown: { signal: "SIGTERM", timeout: 15_000 },
    timeout: 240_000,
    stdout: "pipe",
    stderr: "pipe",
  },
});
