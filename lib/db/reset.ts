import pg from "pg";
import { ensureDatabaseUrl } from "./server";
import { env } from "@/lib/env";

/**
 * Drops and recreates the database this process uses — only when it is a dedicated one named by
 * SUPPORT_DB_NAME (end-to-end runs), never the default or a DATABASE_URL's own database.
 */
export async function resetDatabase(): Promise<void> {
  const name = env().SUPPORT_DB_NAME;
  if (!name) throw new Error("resetDatabase needs SUPPORT_DB_NAME (a dedicated database such as support_e2e)");
  const url = new URL(await ensureDatabaseUrl());
  if (url.pathname.slice(1) !== name) throw new Error(`refusing to reset ${url.pathname.slice(1)}: not the SUPPORT_DB_NAME database`);
  url.pathname = "/postgres";
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
}
