import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AppError } from "@/lib/errors";
import { env, envMarkdown, parseEnv, setting, variables } from "./env";

const root = path.resolve(__dirname, "..");

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "generated" || entry.name === "node_modules" ? [] : sourceFiles(rel);
    return /\.(ts|tsx|mjs)$/.test(entry.name) ? [rel] : [];
  });
}

const readsOf = (file: string) =>
  [...fs.readFileSync(path.join(root, file), "utf8").matchAll(/process\.env\.([A-Z0-9_]+)/g)].map((m) => m[1]!);

describe("the environment module", () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const name of Object.keys(variables)) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  it("gives every variable its default when nothing is set (an empty value counts as unset)", () => {
    const config = parseEnv({ PORT: "", SUPPORT_DB_NAME: "  " });
    expect(config.PORT).toBe(3000);
    expect(config.SUPPORT_DB_NAME).toBeUndefined();
    expect(config.SUPPORT_IN_PROCESS_WORKER).toBe(true);
    expect(config.SUPPORT_LEASE_MS).toBe(15_000);
    expect(config.LOG_LEVEL).toBe("info");
    expect(config.ANTHROPIC_MODEL).toBe("claude-sonnet-5-5");
    expect(config.OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
  });

  it("parses what is set: numbers, 0/1 flags, URLs", () => {
    const config = parseEnv({
      PORT: "3100",
      SUPPORT_IN_PROCESS_WORKER: "0",
      SUPPORT_SKIP_SEED: "1",
      DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/test",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://localhost:4318",
      SUPPORT_PROVIDER_FAULTS: "refund_order:transient:2,*:timeout_after_commit",
    });
    expect(config).toMatchObject({ PORT: 3100, SUPPORT_IN_PROCESS_WORKER: false, SUPPORT_SKIP_SEED: true });
    expect(config.DATABASE_URL).toBe("postgresql://postgres@127.0.0.1:5432/test");
  });

  it("fails with ONE error naming every bad variable, without echoing secrets", () => {
    let caught: unknown;
    try {
      parseEnv({
        PORT: "eighty",
        SUPPORT_IN_PROCESS_WORKER: "yes",
        DATABASE_URL: "mysql://root:hunter2@db/shop",
        LOG_LEVEL: "loud",
        SUPPORT_DB_NAME: "Robert'); DROP",
        OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318",
      });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AppError);
    const error = caught as AppError;
    expect(error.details?.variables).toEqual(
      expect.arrayContaining([
        "PORT",
        "SUPPORT_IN_PROCESS_WORKER",
        "DATABASE_URL",
        "LOG_LEVEL",
        "SUPPORT_DB_NAME",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
      ]),
    );
    expect(error.message).toMatch(/^Invalid environment — 6 variables to fix:/);
    expect(error.message).toContain('PORT="eighty": must be a whole number from 1 to 65535');
    expect(error.message).toContain('SUPPORT_IN_PROCESS_WORKER="yes": must be 0 or 1');
    expect(error.message).toContain("DATABASE_URL: must be a postgresql:// or postgres:// URL");
    expect(error.message).not.toContain("hunter2");
  });

  it("env() reads process.env once and again only when a variable changed", () => {
    delete process.env.SUPPORT_DEFER_MS;
    const first = env();
    expect(env()).toBe(first); // cached
    expect(first.SUPPORT_DEFER_MS).toBe(5000);
    process.env.SUPPORT_DEFER_MS = "7";
    expect(env().SUPPORT_DEFER_MS).toBe(7);
    process.env.SUPPORT_DEFER_MS = "soon";
    expect(() => env()).toThrow(/SUPPORT_DEFER_MS="soon"/);
  });

  it("setting(name) reads one variable as env() does: its default, a change at once, a bad value refused", () => {
    delete process.env.SUPPORT_MAX_TOKENS;
    expect(setting("SUPPORT_MAX_TOKENS")).toBe(env().SUPPORT_MAX_TOKENS);
    expect(setting("SUPPORT_MAX_TOKENS")).toBe(1024);
    process.env.SUPPORT_MAX_TOKENS = "2048";
    expect(setting("SUPPORT_MAX_TOKENS")).toBe(2048); // the next read sees the change
    process.env.SUPPORT_MAX_TOKENS = " ";
    expect(setting("SUPPORT_MAX_TOKENS")).toBe(1024); // blank is unset
    process.env.SUPPORT_MAX_TOKENS = "lots";
    expect(() => setting("SUPPORT_MAX_TOKENS")).toThrow(/SUPPORT_MAX_TOKENS="lots": must be a whole number/);
    expect(() => setting("SUPPORT_MAX_TOKENS")).toThrow(AppError); // still refused: a bad value is never cached
    process.env.SUPPORT_FAILPOINT = "before-effect";
    expect(setting("SUPPORT_FAILPOINT")).toBe("before-effect");
    delete process.env.SUPPORT_FAILPOINT;
    expect(setting("SUPPORT_FAILPOINT")).toBeUndefined();
  });

  it("the README's Configuration section is the table generated from the schema", () => {
    const readme = fs.readFileSync(path.join(root, "README.md"), "utf8");
    const section = readme.split(/^## Configuration$/m)[1]?.split(/^## /m)[0] ?? "";
    expect(section, "README.md has no Configuration section").not.toBe("");
    expect(section.includes(envMarkdown()), "README's Configuration tables differ from lib/env.ts: paste `npm run env:doc`").toBe(true);
  });

  it("documents every variable the code reads, and product code reads none directly", () => {
    const files = [
      ...sourceFiles("app"),
      ...sourceFiles("lib"),
      ...sourceFiles("scripts"),
      ...sourceFiles("components"),
      ...sourceFiles("e2e"),
      ...sourceFiles("test"),
      "instrumentation.ts",
      "proxy.ts",
      "next.config.mjs",
      "playwright.config.ts",
      "vitest.config.ts",
    ];
    const undocumented = files.flatMap((f) =>
      readsOf(f)
        .filter((name) => !(name in variables) && name !== "TZ")
        .map((name) => `${f}: ${name}`),
    );
    expect(undocumented).toEqual([]);
    // Product code goes through env(); only a module that loads before it may read a variable itself.
    const direct = [...sourceFiles("app"), ...sourceFiles("lib"), ...sourceFiles("components"), "proxy.ts"]
      .filter((f) => !f.endsWith(".test.ts") && f !== path.join("lib", "env.ts"))
      .flatMap((f) => readsOf(f).map((name) => `${f}: ${name}`));
    expect(direct).toEqual([]);
    expect(readsOf("instrumentation.ts")).toEqual(["NEXT_RUNTIME"]);
  });
});

describe("a command started with a bad variable", () => {
  // Every command a person runs stops at once with the check's message — what to fix — not a stack trace: the
  // product's (start, worker) and the operator's (migrations, seed, benchmarks, load).
  const commands: [string, string[]][] = [
    ["start", ["scripts/start.ts"]],
    ["worker", ["scripts/worker.ts"]],
    ["db:migrate", ["scripts/db-migrate.ts"]],
    ["db:seed", ["scripts/db-seed.ts"]],
    ["bench", ["scripts/bench.ts"]],
    ["bench:peers", ["scripts/bench-peers.ts"]],
    ["bench:metrics", ["--conditions=react-server", "scripts/bench-metrics.ts"]],
    ["load", ["scripts/load/index.ts"]],
  ];
  it.concurrent.each(commands)(
    "%s: one message naming the variable, exit code 1",
    async (_, args) => {
      const { spawn } = await import("node:child_process");
      const child = spawn(process.execPath, ["--import", "tsx", ...args], {
        cwd: root,
        env: { ...process.env, SUPPORT_DB_ANSWER_MS: "soon", DATABASE_URL: "", SUPPORT_DB_NAME: "" },
      });
      let stderr = "";
      child.stderr.on("data", (d) => (stderr += d));
      child.stdout.on("data", (d) => (stderr += d));
      const code = await new Promise((resolve) => child.on("exit", resolve));
      expect(code).toBe(1);
      expect(stderr).toMatch(/Invalid environment — 1 variable to fix:\n {2}SUPPORT_DB_ANSWER_MS="soon": must be a whole number/);
      expect(stderr).not.toMatch(/\n\s+at /); // no stack
      expect(stderr).not.toContain("throw new AppError"); // no source excerpt
    },
    60_000,
  );
});
