import { ensureDatabaseUrl } from "./server";
import { applyMigrations } from "./migrate";
import { seedDemo } from "./seed";
import { createPrisma } from "./client";

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
    if (process.env.SUPPORT_SKIP_SEED !== "1") {
      const prisma = createPrisma(url, { max: 1 });
      try {
        if ((await prisma.tenant.count()) === 0) {
          await seedDemo(prisma);
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
