// Small admin helpers shared by the global setup and test/db.ts.
import type pg from "pg";

/** `url` with its database replaced by `name` (user, password, host and query parameters kept). */
export function databaseUrl(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(name)}`;
  return u.toString();
}

/** Double-quotes an identifier for SQL. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** Drops (forcibly) every database whose name starts with `prefix`. */
export async function dropDatabasesWithPrefix(client: pg.Client, prefix: string): Promise<string[]> {
  const { rows } = await client.query<{ datname: string }>(
    "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY length(datname) DESC",
    [prefix],
  );
  for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(datname)} WITH (FORCE)`);
  return rows.map((r) => r.datname);
}
