/**
 * The operator CLI. Every invocation is a fresh process that rebuilds everything from the database, which is
 * also how it proves that nothing lives only in memory. Prints one JSON object on stdout; on error, JSON with
 * a stable `code` on stderr and a non-zero exit.
 *
 *   npm run --silent agent -- say --tenant acme [--conversation <id>] [--customer <email>] <text>
 *   npm run --silent agent -- handoffs --tenant acme [--status PENDING] [--kind approval]
 *   npm run --silent agent -- decide <handoffId> --as raj@acme.test --decision approve|deny|edit [--input <json>] [--reason <text>] [--version <n>]
 *   npm run --silent agent -- run <runId>
 *   npm run --silent agent -- effects --tenant acme
 *   npm run --silent agent -- worker [--once]
 */
import { parseArgs } from "node:util";
import { AppError, toPublicError } from "@/lib/errors";
import { createRuntime } from "@/lib/runtime/create-runtime";
import { decide, listEffects, listHandoffs, runDetail, say, tenantBySlug } from "@/lib/operator/commands";
import { runWorker, runWorkerOnce } from "@/lib/runtime/worker";
import { prepareDatabase } from "@/lib/db/prepare";
import { disconnectPrisma } from "@/lib/db/client";
import { stopEmbeddedIfOwner } from "@/lib/db/server";

const json = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x), 2);

async function main(argv: string[]): Promise<unknown> {
  const [command, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      tenant: { type: "string" }, conversation: { type: "string" }, customer: { type: "string" },
      status: { type: "string" }, kind: { type: "string" }, as: { type: "string" }, decision: { type: "string" },
      input: { type: "string" }, reason: { type: "string" }, version: { type: "string" }, once: { type: "boolean" },
    },
  });
  const need = (v: string | undefined, name: string) => {
    if (!v) throw new AppError("INVALID_INPUT", `Missing ${name}.`);
    return v;
  };
  await prepareDatabase();
  const rt = await createRuntime({ role: "cli" });
  switch (command) {
    case "say":
      return say(rt, { tenant: need(values.tenant, "--tenant"), conversationId: values.conversation, customerEmail: values.customer, text: positionals.join(" ") });
    case "handoffs": {
      const tenant = await tenantBySlug(rt.db, need(values.tenant, "--tenant"));
      return { handoffs: await listHandoffs(rt.db, tenant.id, { status: values.status, kind: values.kind }) };
    }
    case "decide": {
      let input: unknown;
      if (values.input !== undefined) {
        try {
          input = JSON.parse(values.input);
        } catch {
          throw new AppError("INVALID_INPUT", "--input is not valid JSON.");
        }
      }
      const version = values.version !== undefined ? Number(values.version) : undefined;
      if (version !== undefined && !Number.isInteger(version)) throw new AppError("INVALID_INPUT", "--version must be a whole number.");
      return decide(rt, { handoffId: need(positionals[0], "<handoffId>"), staffEmail: need(values.as, "--as"), decision: need(values.decision, "--decision"), input, reason: values.reason, version });
    }
    case "run":
      return runDetail(rt.db, need(positionals[0], "<runId>"));
    case "effects":
      return { effects: await listEffects(rt.db, need(values.tenant, "--tenant")) };
    case "worker": {
      if (values.once) return runWorkerOnce(rt);
      const stop = new AbortController();
      process.on("SIGINT", () => stop.abort());
      process.on("SIGTERM", () => stop.abort());
      await runWorker(rt, { signal: stop.signal });
      return { stopped: true };
    }
    default:
      throw new AppError("INVALID_INPUT", `Unknown command ${command ?? "(none)"}. Commands: say, handoffs, decide, run, effects, worker.`);
  }
}

main(process.argv.slice(2))
  .then(async (out) => {
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
