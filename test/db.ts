// Per-test-file databases: `CREATE DATABASE <unique> TEMPLATE <template>` copies the migrated (and, by
// default, seeded) template built once by test/global-setup.ts — a fresh database in a fraction of a second.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { createPrisma, type PrismaClient } from "@/lib/db/client";
import { databaseUrl, quoteIdent } from "./db-admin";

/** A private database for one test file. */
export interface TestDatabase {
  prisma: PrismaClient;
  url: string;
  name: string;
  /** Disconnects the client and drops the database (teardown drops forgotten ones too). */
  drop(): Promise<void>;
}

/**
 * Creates a migrated database for this test file and a PrismaClient on it. `seed` (default true) copies
 * the template already loaded with `seedDemo`; `seed: false` gives empty tables.
 */
export async function createTestDatabase(options: { seed?: boolean } = {}): Promise<TestDatabase> {
  const ctx = inject("testDb");
  const template = options.seed === false ? ctx.template : ctx.seededTemplate;
  const name = `${ctx.prefix}_t_${process.pid}_${randomBytes(4).toString("hex")}`;
  await admin(ctx.adminUrl, async (client) => {
    // Another backend may still be leaving the template (55006): postgres waits 5 s, we retry once more.
    for (let attempt = 1; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE ${quoteIdent(name)} TEMPLATE ${quoteIdent(template)}`);
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== "55006" || attempt >= 3) throw err;
      }
    }
  });
  const url = databaseUrl(ctx.adminUrl, name);
  const prisma = createPrisma(url, { max: 4 });
  let dropped = false;
  return {
    prisma,
    url,
    name,
    async drop() {
      if (dropped) return;
      dropped = true;
      await prisma.$disconnect();
      await admin(ctx.adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`));
    },
  };
}

async function admin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
