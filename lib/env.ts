import { z } from "zod";
import { AppError } from "@/lib/errors";

/**
 * Every environment variable the product reads, in one place: its type, its default and what it is for.
 * `env()` validates them all at once and fails with ONE message naming every bad variable; `npm start` and
 * the worker call it before anything else. The README's "Configuration" table is generated from this file
 * (`npm run env:doc`) and a test keeps the two in step.
 *
 * A few variables are read before this module can load (Playwright's config, Next.js's config, the vitest
 * setup) or are set by a tool rather than by an operator; they are listed here too, so the table is complete.
 */

type Group = "product" | "telemetry" | "demo" | "testing" | "tooling";

interface VariableDoc {
  group: Group;
  /** What the default is, as a reader should see it. */
  default: string;
  description: string;
  /** Never echoed in an error message. */
  secret?: boolean;
}

interface Variable<S extends z.ZodType> extends VariableDoc {
  schema: S;
}

function variable<S extends z.ZodType>(schema: S, doc: VariableDoc): Variable<S> {
  return { schema, ...doc };
}

const text = () => z.string().optional();

function wholeNumber(min: number, max?: number) {
  const expected = max === undefined ? `must be a whole number, at least ${min}` : `must be a whole number from ${min} to ${max}`;
  return z
    .string()
    .regex(/^\d{1,15}$/, expected)
    .transform(Number)
    .refine((n) => n >= min && n <= (max ?? Number.MAX_SAFE_INTEGER), expected);
}

function flag() {
  return z.enum(["0", "1", "true", "false"], { error: "must be 0 or 1" }).transform((v) => v === "1" || v === "true");
}

function url(protocols: readonly string[]) {
  const names = protocols.map((p) => `${p}//`).join(" or ");
  return z.string().refine((raw) => {
    try {
      return protocols.includes(new URL(raw).protocol);
    } catch {
      return false;
    }
  }, `must be a ${names} URL`);
}

/** A JSON API token as `token create` issues them (lib/api/tokens.ts): the demo seed stores it hashed. */
function apiToken() {
  return z
    .string()
    .regex(/^sa_live_[A-Za-z0-9_-]{20,200}$/, "must be `sa_live_` followed by at least 20 letters, digits, `-` or `_`")
    .optional();
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

export const variables = {
  // ── product ────────────────────────────────────────────────────────────────────────────────────────────
  DATABASE_URL: variable(url(["postgresql:", "postgres:"]).optional(), {
    group: "product",
    default: "embedded PostgreSQL in `.data/pg`",
    description: "the PostgreSQL server and database to use instead of the embedded one",
    secret: true,
  }),
  ANTHROPIC_API_KEY: variable(text(), {
    group: "product",
    default: "offline model",
    description: "talk to Claude through the Messages API; without it the deterministic offline model answers",
    secret: true,
  }),
  ANTHROPIC_MODEL: variable(z.string().default("claude-sonnet-5-5"), {
    group: "product",
    default: "`claude-sonnet-5-5`",
    description: "the Claude model (only with `ANTHROPIC_API_KEY`)",
  }),
  ANTHROPIC_BASE_URL: variable(url(["https:", "http:"]).optional(), {
    group: "product",
    default: "Anthropic's API",
    description: "another endpoint speaking the Messages API (a proxy or gateway)",
  }),
  PORT: variable(wholeNumber(1, 65_535).default(3000), {
    group: "product",
    default: "3000",
    description: "the web server's port (`npm start`)",
  }),
  NODE_OPTIONS: variable(text(), {
    group: "product",
    default: "unset",
    description:
      "Node.js's own options. `npm start` runs the web server with `--max-semi-space-size=64` (a larger young generation: less garbage-collection CPU under load) unless this sets `--max-semi-space-size` itself",
  }),
  NEXTAUTH_SECRET: variable(text(), {
    group: "product",
    default: "generated into `.data/nextauth-secret` by `npm start`",
    description: "signs and encrypts staff sessions; set it in any real deployment",
    secret: true,
  }),
  AUTH_SECRET: variable(text(), {
    group: "product",
    default: "—",
    description: "accepted in place of `NEXTAUTH_SECRET`",
    secret: true,
  }),
  NEXTAUTH_URL: variable(url(["https:", "http:"]).optional(), {
    group: "product",
    default: "`http://localhost:$PORT`",
    description: "the console's public URL (sign-in redirects); also an allowed origin for same-origin embeds",
  }),
  APP_URL: variable(url(["https:", "http:"]).optional(), {
    group: "product",
    default: "the request's own origin",
    description: "the app's public URL, allowed as the widget's parent origin beside the request's own",
  }),
  SMTP_URL: variable(url(["smtp:", "smtps:"]).optional(), {
    group: "product",
    default: "the console's demo mailbox",
    description:
      "send mail (one-time codes) over SMTP, e.g. `smtps://user:pass@smtp.example.com:465`; set it together with `MAIL_FROM`, or neither",
    secret: true,
  }),
  MAIL_FROM: variable(text(), {
    group: "product",
    default: "—",
    description: "the sender of the product's mail, e.g. `Acme Support <support@acme.example>` (with `SMTP_URL`)",
  }),
  SUPPORT_TRUSTED_PROXY_HOPS: variable(wholeNumber(0, 10).default(0), {
    group: "product",
    default: "0 (the first `x-forwarded-for` hop)",
    description:
      "how many proxies in front of the app add to `x-forwarded-for`: the client IP the identity-attempt limits count is the one the outermost of them saw",
  }),
  SUPPORT_WIDGET_READS_PER_MIN: variable(wholeNumber(1, 1_000_000).default(600), {
    group: "product",
    default: "600",
    description:
      "widget reads (the view, live updates) one client IP may make per minute, counted in each web process's memory; message and new-chat limits are each shop's policy (`limits`)",
  }),
  SUPPORT_IN_PROCESS_WORKER: variable(flag().default(true), {
    group: "product",
    default: "`1`",
    description: "`0` to run workers only as separate processes (`npm run worker`)",
  }),
  SUPPORT_STREAM_REPLIES: variable(flag().default(true), {
    group: "product",
    default: "`1`",
    description:
      "`0` to show the agent's replies only once complete; otherwise they stream, each sentence shown once it is safe (one that could claim an action waits for the checked reply)",
  }),
  SUPPORT_OFFLINE_STREAM_PACE_MS: variable(wholeNumber(0, 1000).default(30), {
    group: "product",
    default: "30",
    description: "the offline model's pause before each streamed piece of text (so a reply is seen being written); `0` for none",
  }),
  SUPPORT_WORKER_INTERVAL_MS: variable(wholeNumber(1).default(1000), {
    group: "product",
    default: "1000",
    description:
      "how often the in-process worker looks for runs to resume, retry or expire when it cannot listen for notifications (listening, it wakes on them and when something is due, and looks every 30 s at least)",
  }),
  SUPPORT_LEASE_MS: variable(wholeNumber(1).default(15_000), {
    group: "product",
    default: "15000",
    description:
      "how long a worker's claim on a run lasts without renewal (an advance renews it while it works, so a crashed worker's runs are picked up within this)",
  }),
  SUPPORT_WORKER_CONCURRENCY: variable(wholeNumber(1, 256).default(8), {
    group: "product",
    default: "8",
    description: "how many runs one worker advances at the same time",
  }),
  SUPPORT_TOOL_TIMEOUT_MS: variable(wholeNumber(1).default(15_000), {
    group: "product",
    default: "15000",
    description: "time limit of one tool call; an overrun fails transiently and its transaction rolls back",
  }),
  SUPPORT_CLAIM_MS: variable(wholeNumber(1).default(5 * 60_000), {
    group: "product",
    default: "300000",
    description: "how long a reviewer's claim on a handoff lasts",
  }),
  SUPPORT_RETRY_BASE_MS: variable(wholeNumber(1).default(2000), {
    group: "product",
    default: "2000",
    description: "first delay of the exponential backoff for model and tool retries (capped at 5 minutes)",
  }),
  SUPPORT_DEFER_MS: variable(wholeNumber(1).default(5000), {
    group: "product",
    default: "5000",
    description: "how long a call a gate deferred waits before it is gated again",
  }),
  SUPPORT_CONTEXT_BUDGET_TOKENS: variable(wholeNumber(2000).default(8000), {
    group: "product",
    default: "8000",
    description:
      "input tokens a model request may carry (system prompt and tools included); older messages are folded into a rolling summary to stay under it, so a long conversation's cost per turn stays flat (queued customer text is bundled within it too)",
  }),
  SUPPORT_MAX_TOKENS: variable(wholeNumber(1).default(1024), {
    group: "product",
    default: "1024",
    description: "`max_tokens` of a model turn",
  }),
  SUPPORT_MAX_TOKENS_RETRY: variable(wholeNumber(1).default(4096), {
    group: "product",
    default: "4096",
    description: "`max_tokens` of the turns retried after one stopped at `max_tokens`",
  }),
  SUPPORT_DB_NAME: variable(
    z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, "must be a plain lower-case identifier")
      .optional(),
    {
      group: "product",
      default: "`support` (embedded) or `DATABASE_URL`'s database",
      description: "a dedicated database on the same server (end-to-end runs, the benchmark); `npm start -- --reset-db` resets only it",
    },
  ),
  SUPPORT_DB_ANSWER_MS: variable(wholeNumber(0).default(30_000), {
    group: "product",
    default: "30000",
    description:
      "how long a query may wait for the database's answer before its connection is closed and the query fails as `database unavailable (not answering)` (a vanished host, a partition, a frozen server); `0`: no bound",
  }),
  SUPPORT_PG_DURABLE: variable(flag().default(true), {
    group: "product",
    default: "`1`",
    description: "`0` starts the embedded PostgreSQL without fsync (faster, loses commits on an OS crash)",
  }),
  SUPPORT_PG_HOME: variable(text(), {
    group: "product",
    default: "`/var/lib/support-agent`, then `/var/tmp/support-agent`",
    description:
      "as root: the folder for the embedded PostgreSQL's binaries and cluster when the `postgres` user cannot reach the project folder (mode 0700)",
  }),
  SUPPORT_API_RATE_PER_MINUTE: variable(wholeNumber(1, 100_000).default(120), {
    group: "product",
    default: "120",
    description:
      "requests one JSON API token may make per minute (counted in PostgreSQL, across every web process); beyond it `429` with `Retry-After`",
  }),
  SUPPORT_WEBHOOK_PRIVATE_TARGETS: variable(z.enum(["deny", "allow"]).default("deny"), {
    group: "product",
    default: "deny",
    description: "`allow`: webhooks may be delivered to loopback, private and link-local addresses (a receiver on your own network)",
  }),
  SUPPORT_SKIP_SEED: variable(flag().default(false), {
    group: "product",
    default: "`0`",
    description: "`1` keeps an empty database empty (no demo shop)",
  }),

  // ── logs and traces ────────────────────────────────────────────────────────────────────────────────────
  LOG_LEVEL: variable(z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(", ")}` }).default("info"), {
    group: "telemetry",
    default: "`info`",
    description: "the least severe level written to stdout as JSON lines",
  }),
  OTEL_EXPORTER_OTLP_ENDPOINT: variable(url(["https:", "http:"]).optional(), {
    group: "telemetry",
    default: "tracing off",
    description: "an OTLP/HTTP collector (e.g. `http://localhost:4318`): traces of runs are exported there",
  }),
  OTEL_SERVICE_NAME: variable(z.string().default("support-agent"), {
    group: "telemetry",
    default: "`support-agent`",
    description: "`service.name` of the exported traces",
  }),

  // ── demo shop (the seed) ───────────────────────────────────────────────────────────────────────────────
  ACME_WIDGET_SECRET: variable(text(), {
    group: "demo",
    default: "`acme-widget-secret-dev`",
    description: "the demo shop acme's widget secret (signs customer identities), set when the demo is seeded",
    secret: true,
  }),
  ACME_API_TOKEN: variable(apiToken(), {
    group: "demo",
    default: "none (create one: `token create`)",
    description:
      "a JSON API token for acme with every scope (`sa_live_` + at least 20 letters, digits, `-` or `_`), stored hashed when the demo is seeded",
    secret: true,
  }),
  GLOBEX_WIDGET_SECRET: variable(text(), {
    group: "demo",
    default: "`globex-widget-secret-dev`",
    description: "the second demo shop's widget secret",
    secret: true,
  }),
  GLOBEX_API_TOKEN: variable(apiToken(), {
    group: "demo",
    default: "none",
    description: "the same for the second demo shop",
    secret: true,
  }),

  // ── testing only: never set these in production ────────────────────────────────────────────────────────
  SUPPORT_FAILPOINT: variable(text(), {
    group: "testing",
    default: "off",
    description: "crash the process at a named failpoint (`before-effect`, `before-effect:refund_order`, …) like a kill -9",
  }),
  SUPPORT_OFFLINE_SCRIPT: variable(text(), {
    group: "testing",
    default: "off",
    description: "a file of scripted replies the offline model gives first (lets a test script a child process)",
  }),
  SUPPORT_PROVIDER_FAULTS: variable(
    z
      .string()
      .regex(
        /^[a-z_*]+:(transient|timeout_after_commit|facts_unavailable)(:\d+)?(,[a-z_*]+:(transient|timeout_after_commit|facts_unavailable)(:\d+)?)*$/,
        "must look like refund_order:transient:2,cancel_order:timeout_after_commit:1",
      )
      .optional(),
    {
      group: "testing",
      default: "off",
      description: "faults the payments provider injects, e.g. `refund_order:transient:2,*:timeout_after_commit:1`",
    },
  ),
  E2E_PORT: variable(wholeNumber(1, 65_535).default(3100), {
    group: "testing",
    default: "3100",
    description: "port of the server Playwright starts (`playwright.config.ts`)",
  }),
  VITEST_MAX_WORKERS: variable(wholeNumber(1).default(3), {
    group: "testing",
    default: "3",
    description: "test files `npm test` runs at the same time (each has its own database; `vitest.config.ts`)",
  }),
  E2E_BASE_URL: variable(url(["https:", "http:"]).optional(), {
    group: "testing",
    default: "set by `playwright.config.ts`",
    description: "the app's URL as the end-to-end fixtures reach it",
  }),
  CHROMIUM_PATH: variable(text(), {
    group: "testing",
    default: "`/usr/bin/chromium`",
    description: "the browser Playwright drives",
  }),
  SUPPORT_BENCH_DB: variable(text(), {
    group: "testing",
    default: "`support_bench`",
    description: "the database `npm run bench` resets and uses",
  }),
  BENCH_MESSAGES: variable(wholeNumber(1).default(110), {
    group: "testing",
    default: "110",
    description: "customer messages per measured benchmark conversation (2 model turns each)",
  }),
  BENCH_WARMUP_MESSAGES: variable(wholeNumber(0).default(30), {
    group: "testing",
    default: "30",
    description: "messages of the benchmark's warm-up conversation",
  }),
  BENCH_LONG_MESSAGES: variable(wholeNumber(4).default(1000), {
    group: "testing",
    default: "1000",
    description: "messages of the benchmark's long conversation (request size and cost per turn under the context budget)",
  }),
  LOAD_THINK_MS: variable(wholeNumber(0).default(500), {
    group: "testing",
    default: "500",
    description: "`npm run load`: how long a simulated customer waits after a reply before writing again",
  }),
  LOAD_PORTS: variable(z.string().default("3310,3311"), {
    group: "testing",
    default: "3310,3311",
    description: "`npm run load`: the two ports of its web processes",
  }),
  LOAD_MODEL: variable(z.enum(["server", "in-process"]).default("server"), {
    group: "testing",
    default: "server",
    description: "`npm run load`: the offline model behind HTTP in a process of its own (as Claude), or `in-process`",
  }),
  BENCH_ROUNDS: variable(wholeNumber(1).default(3), {
    group: "testing",
    default: "3",
    description: "measured benchmark conversations",
  }),
  BENCH_PARK_SAMPLES: variable(wholeNumber(1).default(30), {
    group: "testing",
    default: "30",
    description: "park → decide → next request samples of the benchmark",
  }),
  BENCH_PARK_WARMUP: variable(wholeNumber(0).default(30), {
    group: "testing",
    default: "30",
    description: "approvals of each kind before the benchmark's measured ones (printed as its cold figures)",
  }),
  SUPPORT_BENCH_METRICS_DB: variable(text(), {
    group: "testing",
    default: "`support_bench_metrics`",
    description: "the database `npm run bench:metrics` resets and fills",
  }),
  BENCH_METRICS_RUNS: variable(wholeNumber(1).default(100_000), {
    group: "testing",
    default: "100000",
    description: "`npm run bench:metrics`: runs of the measured shop (another shop gets a tenth as many)",
  }),
  BENCH_METRICS_REPEAT: variable(wholeNumber(1).default(7), {
    group: "testing",
    default: "7",
    description: "`npm run bench:metrics`: timed runs of each query (the median is printed)",
  }),
  SUPPORT_BENCH_PEERS_DB: variable(text(), {
    group: "testing",
    default: "`support_bench_peers`",
    description: "the database `npm run bench:peers` resets for this product (each peer gets `<name>_langgraph`, `<name>_openai_agents`)",
  }),
  BENCH_PEERS_LATE_TURN: variable(wholeNumber(31).default(200), {
    group: "testing",
    default: "200",
    description: "`npm run bench:peers`: the customer turn its second window is around (conversations run 10 turns past it)",
  }),
  BENCH_PEERS_WARMUP_TURNS: variable(wholeNumber(0).default(20), {
    group: "testing",
    default: "20",
    description: "`npm run bench:peers`: customer turns of each system's warm-up conversation",
  }),
  BENCH_PEERS_ROUNDS: variable(wholeNumber(1).default(3), {
    group: "testing",
    default: "3",
    description: "`npm run bench:peers`: measured conversations per system",
  }),
  BENCH_PEERS_APPROVALS: variable(wholeNumber(1).default(30), {
    group: "testing",
    default: "30",
    description: "`npm run bench:peers`: approve → next request samples per system",
  }),
  BENCH_PEERS_WARMUP_APPROVALS: variable(wholeNumber(0).default(30), {
    group: "testing",
    default: "30",
    description: "`npm run bench:peers`: approvals per system before the measured ones (their median is printed as cold)",
  }),
  BENCH_PEERS_ONLY: variable(z.enum(["langgraph", "openai-agents"]).optional(), {
    group: "testing",
    default: "both peers",
    description: "`npm run bench:peers` against one peer only: `langgraph` or `openai-agents`",
  }),

  FUZZ_SCALE: variable(z.coerce.number().positive().optional(), {
    group: "testing",
    default: "1",
    description: "scales the fuzz suites' case counts (test/fuzz): `0.1` for a quick look, `10` for a long run",
  }),
  FUZZ_SEED: variable(z.coerce.number().int().optional(), {
    group: "testing",
    default: "20261201",
    description: "the fuzz suites' seed (a failure prints the seed and path that reproduce it)",
  }),
  // ── set by tools, not by you ───────────────────────────────────────────────────────────────────────────
  NEXT_RUNTIME: variable(text(), {
    group: "tooling",
    default: "set by Next.js",
    description: "`nodejs` or `edge`; `instrumentation.ts` starts the worker and tracing only under `nodejs`",
  }),
  NEXT_TELEMETRY_DISABLED: variable(text(), {
    group: "tooling",
    default: "`1` (set by `npm start`)",
    description: "keeps Next.js from sending usage telemetry",
  }),
  CI: variable(text(), {
    group: "tooling",
    default: "unset",
    description: "set by `.ci/run`: Playwright prints a list instead of an HTML report",
  }),
};

type Variables = typeof variables;
export type VariableName = keyof Variables;
export type Env = { [K in VariableName]: z.output<Variables[K]["schema"]> };

const names = Object.keys(variables) as VariableName[];

const envSchema = z.object(
  Object.fromEntries(names.map((name) => [name, variables[name].schema])) as {
    [K in VariableName]: Variables[K]["schema"];
  },
);

/**
 * Validates `source` against the schema: every problem at once, in one AppError whose message lists each bad
 * variable with what it must be (values of secrets are never echoed). An empty string counts as unset.
 */
export function parseEnv(source: Record<string, string | undefined>): Env {
  const raw: Record<string, string> = {};
  for (const name of names) {
    const value = source[name]?.trim();
    if (value) raw[name] = value;
  }
  const parsed = envSchema.safeParse(raw);
  if (parsed.success) return parsed.data as Env;
  const problems = parsed.error.issues.map((issue) => {
    const name = String(issue.path[0]) as VariableName;
    const shown = variables[name]?.secret ? "" : `=${JSON.stringify(raw[name])}`;
    return `  ${name}${shown}: ${issue.message} (${variables[name]?.description ?? "unknown variable"})`;
  });
  const message =
    `Invalid environment — ${problems.length} variable${problems.length === 1 ? "" : "s"} to fix:\n${problems.join("\n")}\n` +
    "Every variable is described in the Configuration section of README.md (`npm run env:doc`).";
  throw new AppError("INVALID_INPUT", message, { variables: parsed.error.issues.map((i) => String(i.path[0])) });
}

let cache: { key: string; value: Env } | undefined;

/**
 * The validated environment of this process. Parsed once and reused while the variables stay the same; tests
 * that change `process.env` between cases get a fresh parse (comparing ~40 strings is cheaper than any I/O).
 */
export function env(): Env {
  const key = names.map((name) => process.env[name] ?? "").join("\u0000");
  if (cache?.key !== key) cache = { key, value: parseEnv(process.env) };
  return cache.value;
}

const settings = new Map<VariableName, { raw: string | undefined; value: unknown }>();

/**
 * One variable of `env()`, for code that reads it on every turn: `env()` reads every variable to see whether any
 * changed (≈20 µs a call); this reads only `name` and parses it again only when its text changed. Same schema, same
 * default, and a bad value throws the same error as `env()` would.
 */
export function setting<K extends VariableName>(name: K): Env[K] {
  const raw = process.env[name];
  const known = settings.get(name);
  if (known && known.raw === raw) return known.value as Env[K];
  const value = parseEnv({ [name]: raw })[name];
  settings.set(name, { raw, value });
  return value;
}

const GROUP_TITLES: Record<Group, string> = {
  product: "",
  telemetry: "Logs and traces",
  demo: "Demo shop (read when the demo data is seeded)",
  testing: "Testing only — never set these in production",
  tooling: "Set by tools, not by you",
};

/** The README's configuration tables, one per group, generated from the schema (`npm run env:doc`). */
export function envMarkdown(): string {
  const sections = (Object.keys(GROUP_TITLES) as Group[]).map((group) => {
    const rows = names
      .filter((name) => variables[name].group === group)
      .map((name) => [`\`${name}\``, variables[name].default, variables[name].description]);
    const header = ["variable", "default", "meaning"];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
    const table = [line(header), `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`, ...rows.map(line)].join("\n");
    return GROUP_TITLES[group] ? `**${GROUP_TITLES[group]}**\n\n${table}` : table;
  });
  return sections.join("\n\n");
}
