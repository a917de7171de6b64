// Applies prisma/migrations to a PostgreSQL database through the WASM schema engine (the Prisma CLI
// cannot migrate offline). Writes the standard `_prisma_migrations` table, so the history is the one
// `prisma migrate deploy` would keep. Safe to call from several processes at once (advisory lock) and
// from a Next.js server (no import.meta.url, runtime-resolved paths).
import fs from "node:fs";
import path from "node:path";
import pg from "pg";
import { PrismaPg } from "@prisma/adapter-pg";
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import type { MigrationList } from "@prisma/schema-engine-wasm";
import { projectRoot } from "./server";
import { openSchemaEngine, toDriverAdapterError, wholeScriptAdapter } from "./schema-engine";

/** The provider written to migration_lock.toml. */
export const MIGRATION_PROVIDER = "postgresql";
// Serialises concurrent appliers (web server + worker starting together). Not Prisma's own key
// (72707369), so it can never deadlock against a lock the engine might take itself.
const ADVISORY_LOCK_KEY = 7270736901;

/** prisma/migrations under the project root. */
export function migrationsDir(root: string = projectRoot()): string {
  return path.join(root, "prisma", "migrations");
}

/** prisma/schema.prisma under the project root. */
export function schemaPath(root: string = projectRoot()): string {
  return path.join(root, "prisma", "schema.prisma");
}

/** Reads the migrations folder as the engine expects it: sorted `<timestamp>_<name>/migration.sql` plus the lockfile. */
export function readMigrations(dir: string = migrationsDir()): MigrationList {
  const lockPath = path.join(dir, "migration_lock.toml");
  // turbopackIgnore: a runtime folder, not something for Next's file tracing to follow
  const names = fs.existsSync(/* turbopackIgnore: true */ dir)
    ? fs
        .readdirSync(/* turbopackIgnore: true */ dir, { withFileTypes: true })
        .filter((d) => d.isDirectory() && fs.existsSync(path.join(dir, d.name, "migration.sql")))
        .map((d) => d.name)
        .sort()
    : [];
  return {
    baseDir: dir,
    lockfile: { path: "migration_lock.toml", content: fs.existsSync(lockPath) ? fs.readFileSync(lockPath, "utf8") : null },
    shadowDbInitScript: "",
    migrationDirectories: names.map((name) => ({
      path: name,
      migrationFile: {
        path: "migration.sql",
        content: { tag: "ok" as const, value: fs.readFileSync(path.join(dir, name, "migration.sql"), "utf8") },
      },
    })),
  };
}

/**
 * Applies every pending migration in prisma/migrations to `databaseUrl` and returns the names applied
 * (empty when up to date). Throws with the database's real error when a migration fails; a failed
 * migration is recorded in `_prisma_migrations` as Prisma does, and must be resolved by hand.
 */
export async function applyMigrations(databaseUrl: string, options: { root?: string } = {}): Promise<{ applied: string[] }> {
  const root = options.root ?? projectRoot();
  const list = readMigrations(migrationsDir(root));
  if (list.migrationDirectories.length === 0) return { applied: [] };
  const schema = fs.readFileSync(schemaPath(root), "utf8");

  const lockClient = new pg.Client({ connectionString: databaseUrl });
  lockClient.on("error", () => {});
  await lockClient.connect();
  const factory = new PgScriptFactory(databaseUrl);
  try {
    await lockClient.query("SELECT pg_advisory_lock($1)", [ADVISORY_LOCK_KEY]);
    const handle = await openSchemaEngine(schema, factory);
    try {
      const out = await handle.call((e) => e.applyMigrations({ migrationsList: list, filters: { externalTables: [], externalEnums: [] } }));
      return { applied: out.appliedMigrationNames };
    } finally {
      handle.free();
    }
  } finally {
    await factory.close();
    await lockClient.query("SELECT pg_advisory_unlock($1)", [ADVISORY_LOCK_KEY]).catch(() => {});
    await lockClient.end().catch(() => {});
  }
}

/**
 * adapter-pg factory whose adapters run scripts whole, and which closes every pool it opened. No
 * shadow database: applying needs none, and adapter-pg would derive it from the connection string,
 * where pg lets the URL's database override the shadow's name (the "shadow" would be the real DB).
 */
class PgScriptFactory implements SqlMigrationAwareDriverAdapterFactory {
  readonly provider = "postgres" as const;
  readonly adapterName = "@prisma/adapter-pg";
  private readonly inner: PrismaPg;
  private readonly opened: SqlDriverAdapter[] = [];

  constructor(url: string) {
    this.inner = new PrismaPg({ connectionString: url, max: 2 });
  }

  async connect(): Promise<SqlDriverAdapter> {
    const adapter = await this.inner.connect();
    const wrapped = wholeScriptAdapter(adapter, async (script) => {
      // No parameters -> pg uses the simple protocol: many statements, one implicit transaction.
      try {
        await adapter.executeRaw({ sql: script, args: [], argTypes: [] });
      } catch (err) {
        throw toDriverAdapterError(err);
      }
    });
    this.opened.push(adapter);
    return wrapped;
  }

  async connectToShadowDb(): Promise<SqlDriverAdapter> {
    throw new Error("applyMigrations needs no shadow database; author migrations with scripts/db-migration.ts");
  }

  async close(): Promise<void> {
    await Promise.all(this.opened.splice(0).map((a) => a.dispose().catch(() => {})));
  }
}
