// Vitest global setup: once per run, resolve the database server (the shared embedded one, or the server
// of DATABASE_URL), build migrated template databases beside the real ones, and hand their names to the
// workers (provide/inject). test/db.ts copies a template per test file. Never touches the database
// DATABASE_URL names: everything created here carries this run's prefix and is dropped at teardown.
import pg from "pg";
import type { TestProject } from "vitest/node";
import { createPrisma } from "@/lib/db/client";
import { applyMigrations } from "@/lib/db/migrate";
import { seedDemo } from "@/lib/setup/seed";
import { ensureDatabaseUrl, isEmbeddedUnavailable, stopEmbeddedIfOwner } from "@/lib/db/server";
import { databaseUrl, dropDatabasesWithPrefix, quoteIdent } from "./db-admin";

/** What the workers receive. */
export interface TestDbContext {
  /** "embedded" or "external" (DATABASE_URL) */
  mode: "embedded" | "external";
  /** a URL on the server for admin statements (CREATE/DROP DATABASE); its database is never dropped */
  adminUrl: string;
  /** migrated, empty */
  template: string;
  /** migrated and seeded with seedDemo */
  seededTemplate: string;
  /** prefix of every database this run creates */
  prefix: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    testDb: TestDbContext;
  }
}

/** Builds the templates and provides their names; returns the teardown. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = Boolean(process.env.DATABASE_URL);
  const adminUrl = await ensureDatabaseUrl().catch((err: unknown) => {
    // "The embedded PostgreSQL cannot run here … set DATABASE_URL …": one sentence, not a stack trace.
    if (isEmbeddedUnavailable(err)) err.stack = err.message;
    throw err;
  });
  const prefix = `support_tpl_${process.pid}`;
  const template = prefix;
  const seededTemplate = `${prefix}_seeded`;

  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await dropDatabasesWithPrefix(admin, prefix); // leftovers of a crashed run with a recycled pid
    await admin.query(`CREATE DATABASE ${quoteIdent(template)}`);
    await applyMigrations(databaseUrl(adminUrl, template));
    await admin.query(`CREATE DATABASE ${quoteIdent(seededTemplate)} TEMPLATE ${quoteIdent(template)}`);
    const prisma = createPrisma(databaseUrl(adminUrl, seededTemplate), { max: 2 });
    try {
      await seedDemo(prisma);
    } finally {
      await prisma.$disconnect(); // a template must have no connections when copied
    }
  } finally {
    await admin.end();
  }

  const context: TestDbContext = { mode: external ? "external" : "embedded", adminUrl, template, seededTemplate, prefix };
  project.provide("testDb", context);

  return async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await dropDatabasesWithPrefix(client, prefix);
    } finally {
      await client.end();
    }
    await stopEmbeddedIfOwner();
  };
}
