// npm run db:migrate — resolve the database (starting the embedded server if needed), apply pending
// migrations, print what was applied. Exits explicitly: the WASM engine leaves a timer armed.
import "./env-first"; // first: a bad variable stops here, with what to fix
import { applyMigrations } from "@/lib/db/migrate";
import { ensureDatabaseUrl, stopEmbeddedIfOwner } from "@/lib/db/server";

async function main(): Promise<void> {
  const url = await ensureDatabaseUrl();
  const { applied } = await applyMigrations(url);
  console.log(`database: ${redact(url)}`);
  console.log(
    applied.length ? `applied ${applied.length} migration(s):\n${applied.map((n) => `  ${n}`).join("\n")}` : "already up to date",
  );
}

/** Hides a password in a URL before printing it. */
function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:***@");
}

let code = 0;
try {
  await main();
} catch (err) {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  code = 1;
} finally {
  await stopEmbeddedIfOwner().catch((err: unknown) => console.error("stopping embedded PostgreSQL:", err));
}
process.exit(code);
