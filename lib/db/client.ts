// PrismaClient construction. Prisma 7 needs a driver adapter; we use @prisma/adapter-pg over the URL
// resolved by ./server (DATABASE_URL or the shared embedded server).
//
//   const prisma = await getPrisma();   // the process-wide client (app code, worker, CLI)
//   const mine = createPrisma(url);     // a private client (tests, benchmarks); $disconnect() it yourself
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "@/lib/generated/prisma/client";
import { ensureDatabaseUrl } from "./server";
import { kyselyOnPool, registerStore } from "./kysely";
import { createPool, type PoolOptions, registerPool } from "./sql";

// Convenience: `Prisma`, `PrismaClient`, the enums and model types, from one place.
export * from "@/lib/generated/prisma/client";

// On globalThis so Next.js dev reloads reuse the client instead of leaking a pool per reload.
interface ClientCache {
  client?: Promise<PrismaClient>;
}
const g = globalThis as typeof globalThis & { __supportPrisma?: ClientCache };
const cache: ClientCache = (g.__supportPrisma ??= {});

/**
 * A new PrismaClient on `url` (its own pg pool, which the runtime's hot path also uses directly: lib/db/sql).
 * The caller owns it and must `$disconnect()` it; that ends the pool.
 */
export function createPrisma(url: string, options: PoolOptions = {}): PrismaClient {
  const pool = createPool(url, options);
  const client = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  registerPool(client, pool);
  registerStore(client, kyselyOnPool(pool));
  // Prisma ends the pool only if it ever connected; the runtime may have used the pool without it.
  const disconnect = client.$disconnect.bind(client);
  client.$disconnect = async () => {
    await disconnect();
    if (!pool.ended) await pool.end();
  };
  return client;
}

/** The process-wide PrismaClient, created on first use for the URL from `ensureDatabaseUrl()`. */
export function getPrisma(): Promise<PrismaClient> {
  cache.client ??= ensureDatabaseUrl()
    .then((url) => createPrisma(url))
    .catch((err: unknown) => {
      cache.client = undefined;
      throw err;
    });
  return cache.client;
}

/** Disconnects and forgets the process-wide client (CLI exit, test teardown). Safe to call when none exists. */
export async function disconnectPrisma(): Promise<void> {
  const pending = cache.client;
  cache.client = undefined;
  if (!pending) return;
  const client = await pending.catch(() => undefined);
  await client?.$disconnect();
}
