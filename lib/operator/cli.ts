// The operator CLI's parsing and dispatch, in-process (scripts/agent.ts is the process around it: one JSON answer on
// stdout, errors as JSON with a stable code on stderr). Bad arguments of any kind are AppError INVALID_INPUT.
import { parseArgs } from "node:util";
import { AppError } from "@/lib/errors";
import { isWellFormed } from "@/lib/storable-text";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { decide, listEffects, type PageRequest, pageOfHandoffs, say, tenantBySlug } from "@/lib/operator/commands";
import { runDetail } from "@/lib/runs/detail";
import { API_SCOPES, parseScopeList } from "@/lib/api/scopes";
import { issueApiToken, listApiTokens, revokeApiToken } from "@/lib/api/tokens";
import { runWorker, runWorkerOnce } from "@/lib/runtime/worker";
import { sealTenant, verifyAuditChain } from "@/lib/audit/chain";
import { storeOf } from "@/lib/db/kysely";

/** A check whose report is printed on stdout like any answer, with a non-zero exit code. */
export class FailedCheck {
  constructor(readonly report: unknown) {}
}

const OPTIONS = {
  tenant: { type: "string" },
  conversation: { type: "string" },
  customer: { type: "string" },
  status: { type: "string" },
  kind: { type: "string" },
  as: { type: "string" },
  decision: { type: "string" },
  input: { type: "string" },
  reason: { type: "string" },
  version: { type: "string" },
  once: { type: "boolean" },
  name: { type: "string" },
  scopes: { type: "string" },
  limit: { type: "string" },
  cursor: { type: "string" },
  run: { type: "string" },
} as const;

export interface CliCommand {
  command: string | undefined;
  values: { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]["type"] extends "boolean" ? boolean : string };
  positionals: string[];
}

/** Parses the arguments (after the command name is the first); an unknown or malformed option is INVALID_INPUT. */
export function parseCli(argv: string[]): CliCommand {
  // The database stores text only: a NUL or a lone surrogate in any argument is refused before anything is read.
  for (const arg of argv)
    if (arg.includes("\u0000") || !isWellFormed(arg))
      throw new AppError("INVALID_INPUT", "An argument contains a character that is not text (NUL or an unpaired surrogate).");
  const [command, ...rest] = argv;
  try {
    const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: OPTIONS });
    return { command, values: values as CliCommand["values"], positionals };
  } catch (err) {
    // node:util's parse errors (unknown option, missing value) are the caller's mistake, said in its own words.
    if ((err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) throw new AppError("INVALID_INPUT", (err as Error).message);
    throw err;
  }
}

const need = (v: string | undefined, name: string) => {
  if (!v) throw new AppError("INVALID_INPUT", `Missing ${name}.`);
  return v;
};

// The lists (`handoffs`, `effects`) come a page at a time: a shop's whole history is no answer to print at once.
const PAGE = { default: 50, max: 500 };

/** `--limit` (a whole number, 1–500; 50 when absent) and `--cursor` (a page's nextCursor) of a list command. */
function pageRequest(values: CliCommand["values"]): PageRequest {
  const raw = values.limit ?? String(PAGE.default);
  const limit = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(limit >= 1 && limit <= PAGE.max)) throw new AppError("INVALID_INPUT", `--limit must be a whole number from 1 to ${PAGE.max}.`);
  return { limit, ...(values.cursor ? { cursor: values.cursor } : {}) };
}

/** Runs a parsed command on a runtime. `worker` without --once runs until `signal` aborts. */
export async function dispatchCli(cli: CliCommand, rt: RuntimeDeps, signal?: AbortSignal): Promise<unknown> {
  const { command, values, positionals } = cli;
  // An empty --conversation is a mistake, not "none": say would open a new conversation, handoffs list every one.
  if (values.conversation === "") throw new AppError("INVALID_INPUT", "--conversation is empty.");
  if (values.cursor === "") throw new AppError("INVALID_INPUT", "--cursor is empty: pass the nextCursor a page gave out.");
  if (values.run === "") throw new AppError("INVALID_INPUT", "--run is empty.");
  switch (command) {
    case "say":
      return say(rt, {
        tenant: need(values.tenant, "--tenant"),
        conversationId: values.conversation,
        customerEmail: values.customer,
        text: positionals.join(" "),
      });
    case "handoffs": {
      const tenant = await tenantBySlug(rt.db, need(values.tenant, "--tenant"));
      const filter = { status: values.status, kind: values.kind, conversationId: values.conversation };
      return pageOfHandoffs(rt.db, tenant.id, filter, pageRequest(values));
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
      return decide(rt, {
        handoffId: need(positionals[0], "<handoffId>"),
        staffEmail: need(values.as, "--as"),
        decision: need(values.decision, "--decision"),
        input,
        reason: values.reason,
        version,
      });
    }
    case "run":
      return runDetail(rt.db, need(positionals[0], "<runId>"));
    case "effects":
      return listEffects(rt.db, need(values.tenant, "--tenant"), pageRequest(values), { runId: values.run });
    case "token":
      return tokenCommand(rt.db, positionals, values);
    case "audit":
      return auditCommand(rt.db, positionals, values);
    case "worker": {
      if (values.once) return runWorkerOnce(rt);
      await runWorker(rt, { signal: signal ?? new AbortController().signal });
      return { stopped: true };
    }
    default:
      throw new AppError(
        "INVALID_INPUT",
        `Unknown command ${command ?? "(none)"}. Commands: say, handoffs, decide, run, effects, worker, token, audit.`,
      );
  }
}

/** JSON API tokens: created with the token printed this once (only its hash is kept), listed, revoked. */
async function tokenCommand(db: RuntimeDeps["db"], positionals: string[], values: { tenant?: string; name?: string; scopes?: string }) {
  const [sub, id] = positionals;
  switch (sub) {
    case "create": {
      const tenant = await tenantBySlug(db, need(values.tenant, "--tenant"));
      const scopes = parseScopeList(values.scopes);
      if (!Array.isArray(scopes))
        throw new AppError("INVALID_INPUT", `Unknown scope ${scopes.unknown.join(", ")}. Scopes: ${API_SCOPES.join(", ")}.`);
      const { token, apiToken } = await issueApiToken(db, {
        tenantId: tenant.id,
        name: need(values.name, "--name"),
        scopes,
        issuedBy: { operator: true },
      });
      return { tenant: tenant.slug, ...apiToken, token, note: "Store the token now: it is shown this once, and only its hash is kept." };
    }
    case "list": {
      const tenant = await tenantBySlug(db, need(values.tenant, "--tenant"));
      return { tenant: tenant.slug, tokens: await listApiTokens(db, tenant.id) };
    }
    case "revoke":
      return { revoked: await revokeApiToken(db, { id: need(id, "<tokenId>"), revokedBy: { operator: true } }) };
    default:
      throw new AppError("INVALID_INPUT", `Unknown token command ${sub ?? "(none)"}. Commands: token create, token list, token revoke.`);
  }
}

/** The audit chain: verify walks it and names the first record altered or removed; seal adds pending records now. */
async function auditCommand(db: RuntimeDeps["db"], positionals: string[], values: { tenant?: string }) {
  const [sub] = positionals;
  const tenant = await tenantBySlug(db, need(values.tenant, "--tenant"));
  switch (sub) {
    case "verify": {
      const report = { tenant: tenant.slug, ...(await verifyAuditChain(storeOf(db), tenant.id)) };
      return report.ok ? report : new FailedCheck(report);
    }
    case "seal": {
      let sealed = 0;
      for (let n = -1; n !== 0; sealed += n) n = await sealTenant(storeOf(db), tenant.id);
      return { tenant: tenant.slug, sealed };
    }
    default:
      throw new AppError("INVALID_INPUT", `Unknown audit command ${sub ?? "(none)"}. Commands: audit verify, audit seal.`);
  }
}
