// Setting up: what a process does before it serves — the database reachable, migrated, and the demo shop loaded into
// an empty one (lib/setup/seed). Above every other module, since the demo is made with the product's own code.
import { createPrisma } from "@/lib/db/client";
import { applyMigrations } from "@/lib/db/migrate";
import { noteDatabaseFailure } from "@/lib/db/outage";
import { ensureDatabaseUrl } from "@/lib/db/server";
import { seedDemo } from "./seed";
import { env } from "@/lib/env";

const g = globalThis as typeof globalThis & { __supportPrepared?: Promise<{ url: string; applied: string[]; seeded: boolean }> };

/**
 * Makes the database ready for this process: resolves the server (embedded or DATABASE_URL), applies pending
 * migrations, and loads the demo data into an empty database. Idempotent and safe from several processes
 * (migrations are recorded in _prisma_migrations; the seed does nothing once the demo shop exists).
 * Set SUPPORT_SKIP_SEED=1 to keep an empty database empty.
 */
export function prepareDatabase(): Promise<{ url: string; applied: string[]; seeded: boolean }> {
  g.__supportPrepared ??= (async () => {
    const url = await ensureDatabaseUrl();
    const { applied } = await applyMigrations(url);
    let seeded = false;
    if (!env().SUPPORT_SKIP_SEED) {
      const prisma = createPrisma(url, { max: 1 });
      try {
        if ((await prisma.tenant.count()) === 0) {
          await seedDemo(prisma, { history: true });
          seeded = true;
        }
      } finally {
        await prisma.$disconnect();
      }
    }
    return { url, applied, seeded };
  })().catch((err) => {
    g.__supportPrepared = undefined;
    throw err;
  });
  return g.__supportPrepared;
}

/**
 * prepareDatabase(), waiting for the database while it is unreachable (a server still starting, a restart):
 * retries every 1–5 s, logging the outage once (lib/db/outage), until it succeeds or `signal` aborts.
 * Any other failure (bad migration, the embedded server cannot run here) is thrown at once.
 */
export async function prepareDatabaseWhenReachable(signal?: AbortSignal): Promise<{ url: string; applied: string[]; seeded: boolean }> {
  for (let delay = 1000; ; delay = Math.min(delay * 2, 5000)) {
    try {
      return await prepareDatabase();
    } catch (err) {
      if (signal?.aborted || !noteDatabaseFailure(err, "startup")) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
