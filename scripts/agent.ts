/**
 * The operator CLI. Every invocation is a fresh process that rebuilds everything from the database, which is
 * also how it proves that nothing lives only in memory. Prints one JSON object on stdout; on error, JSON with
 * a stable `code` on stderr and a non-zero exit.
 *
 *   npm run --silent agent -- say --tenant acme [--conversation <id>] [--customer <email>] <text>
 *   npm run --silent agent -- handoffs --tenant acme [--status PENDING] [--kind approval] [--conversation <id>] [--limit 50] [--cursor <c>]
 *   npm run --silent agent -- decide <handoffId> --as raj@acme.test --decision approve|deny|edit [--input <json>] [--reason <text>] [--version <n>]
 *   npm run --silent agent -- run <runId>
 *   npm run --silent agent -- effects --tenant acme [--run <runId>] [--limit 50] [--cursor <c>]
 *   npm run --silent agent -- worker [--once]
 *   npm run --silent agent -- token create --tenant acme --name <name> [--scopes handoffs:read,handoffs:decide]
 *   npm run --silent agent -- token list --tenant acme
 *   npm run --silent agent -- token revoke <tokenId>
 *   npm run --silent agent -- audit verify --tenant acme   (exit code 1 when a record was altered or removed)
 *   npm run --silent agent -- audit seal --tenant acme     (seals pending records now, as the worker does)
 */
import { AppError, toPublicError } from "@/lib/errors";
import { createRuntime } from "@/lib/runtime/create-runtime";
import { dispatchCli, FailedCheck, parseCli } from "@/lib/operator/cli";
import { prepareDatabase } from "@/lib/setup/prepare";
import { disconnectPrisma } from "@/lib/db/client";
import { stopEmbeddedIfOwner } from "@/lib/db/server";
import { sendLogsTo } from "@/lib/log";

// stdout carries the command's one JSON answer: diagnostics (the JSON log lines) go to stderr.
sendLogsTo(process.stderr);

const json = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x), 2);

async function main(argv: string[]): Promise<unknown> {
  const cli = parseCli(argv);
  await prepareDatabase();
  const rt = await createRuntime({ role: "cli" });
  const stop = new AbortController();
  process.on("SIGINT", () => stop.abort());
  process.on("SIGTERM", () => stop.abort());
  return dispatchCli(cli, rt, stop.signal);
}

main(process.argv.slice(2))
  .then(async (out) => {
    if (out instanceof FailedCheck) {
      process.stdout.write(json(out.report) + "\n");
      process.exitCode = 1;
      return;
    }
    process.stdout.write(json(out) + "\n");
    process.exitCode = 0;
  })
  .catch((err) => {
    if (!(err instanceof AppError)) console.error(err);
    process.stderr.write(json(toPublicError(err)) + "\n");
    process.exitCode = 1;
  })
  .finally(async () => {
    await disconnectPrisma().catch(() => undefined);
    await stopEmbeddedIfOwner().catch(() => undefined);
    process.exit(process.exitCode ?? 0);
  });
