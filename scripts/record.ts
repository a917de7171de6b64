/**
 * `npm run record [-- <scenario>…]`: plays the demo scenarios (test/claude-scenarios.ts) through the real runtime
 * against the real Claude API, with the SDK's fetch wrapped in a recording fetch, and writes each exchange list as
 * test/fixtures/claude/<scenario>.json — API keys and authorization headers dropped, emails, names, addresses,
 * database ids and dates replaced by placeholders (lib/model/replay.ts). Each scenario starts from a freshly
 * seeded database `support_record`. Scenarios the API cannot be made to play on demand (a 529, a refusal) keep
 * their hand-written fixtures.
 *
 * `npm run record -- --hand-written` writes every fixture from the hand-written responses in
 * test/claude-hand-written.ts instead of the API (no key needed): for when the runtime's requests change and no
 * key is at hand. The fixtures then say so in their header.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const handWritten = args.includes("--hand-written");
const apiKey = process.env.ANTHROPIC_API_KEY;
if (!apiKey && !handWritten) {
  process.stderr.write(
    "npm run record needs ANTHROPIC_API_KEY to play the demo scenarios against Claude (the tests replay the saved fixtures and need no key).\n",
  );
  process.exit(1);
}

process.env.SUPPORT_DB_NAME = "support_record";
process.env.SUPPORT_SKIP_SEED = "1";
process.env.SUPPORT_RETRY_BASE_MS ??= "50";
process.env.SUPPORT_OFFLINE_STREAM_PACE_MS ??= "0";

const { resetDatabase } = await import("@/lib/db/reset");
const { ensureDatabaseUrl, stopEmbeddedIfOwner } = await import("@/lib/db/server");
const { applyMigrations } = await import("@/lib/db/migrate");
const { createPrisma } = await import("@/lib/db/client");
const { seedDemo } = await import("@/lib/setup/seed");
const { createModelClient } = await import("@/lib/model/client");
const { env } = await import("@/lib/env");
const { createRecordingFetch, fixtureFrom, serialiseFixture } = await import("@/lib/model/replay");
const { CLAUDE_SCENARIOS, playScenario, sensitiveValues } = await import("../test/claude-scenarios");
const { handWrittenFetch } = await import("../test/claude-hand-written");
const sdkVersion = (await import("@anthropic-ai/sdk/version")).VERSION;

const only = args.filter((a) => !a.startsWith("--"));
const scenarios = CLAUDE_SCENARIOS.filter((s) => (only.length ? only.includes(s.name) : true)).filter((s) => handWritten || s.recordable);
const outDir = path.join(process.cwd(), "test", "fixtures", "claude");
mkdirSync(outDir, { recursive: true });
const model = handWritten ? "claude-sonnet-5-5" : env().ANTHROPIC_MODEL;

try {
  for (const scenario of scenarios) {
    await resetDatabase();
    const url = await ensureDatabaseUrl();
    await applyMigrations(url);
    const db = createPrisma(url, { max: 4 });
    try {
      await seedDemo(db);
      const recording = createRecordingFetch(handWritten ? handWrittenFetch(scenario.name) : globalThis.fetch);
      const client = createModelClient({
        apiKey: apiKey ?? "hand-written",
        baseURL: handWritten ? "https://api.anthropic.com" : undefined,
        fetch: recording.fetch,
        model,
        maxRetries: scenario.maxRetries,
      });
      const played = await playScenario({ db, model: client, workerId: "record", leaseMs: 30_000 }, scenario);
      await recording.settled();
      const fixture = fixtureFrom(recording.exchanges, {
        header: {
          scenario: scenario.name,
          source: handWritten ? "hand-written" : "recorded",
          note: handWritten
            ? "Hand-written, NOT recorded from Claude (no API key was available): the responses were written to the Messages API's documented wire format (test/claude-hand-written.ts), the requests are what the runtime sent for them. `npm run record` with ANTHROPIC_API_KEY replaces this file with a real recording."
            : `Recorded from the Claude API by \`npm run record\`: ${scenario.title}.`,
          model,
          sdk: `@anthropic-ai/sdk ${sdkVersion}`,
          recordedAt: new Date().toISOString().slice(0, 10),
        },
        sensitive: await sensitiveValues(db),
      });
      const file = path.join(outDir, `${scenario.name}.json`);
      writeFileSync(file, serialiseFixture(fixture));
      process.stdout.write(
        `${scenario.name}: ${fixture.exchanges.length} exchanges, phases ${played.phases.join(" → ")} → ${path.relative(process.cwd(), file)}\n`,
      );
    } finally {
      await db.$disconnect();
    }
  }
} finally {
  await stopEmbeddedIfOwner();
}
