// Prisma's schema engine compiled to WASM, loaded without Node flags and without a bundler in the way.
//
// The Prisma CLI cannot migrate here (it downloads a native engine). We instantiate the wasm ourselves:
// glue = `@prisma/schema-engine-wasm/schema_engine_bg` (JS), binary = prisma's own
// `prisma/build/schema_engine_bg.wasm` (the engine of the installed prisma, 7.10.1 = d1b3f377), falling
// back to the wasm shipped beside the glue. No npm release of @prisma/schema-engine-wasm matches
// d1b3f377; the glue of 8.1.0-2.59be4fd has the identical import/export set and works with it.
//
// Paths are resolved at runtime with createRequire from the project root, and the glue is imported from
// a file URL with bundler-ignore hints: inside a Next.js server a bundler would rewrite
// `createRequire(import.meta.url)` and static imports of the package.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { SchemaEngine } from "@prisma/schema-engine-wasm";
import {
  bindMigrationAwareSqlAdapterFactory,
  DriverAdapterError,
  type ErrorRegistry,
  type SqlDriverAdapter,
  type SqlMigrationAwareDriverAdapterFactory,
} from "@prisma/driver-adapter-utils";
import { projectRoot } from "./server";

export type { SchemaEngine };

type Glue = typeof import("@prisma/schema-engine-wasm");

interface EngineModuleCache {
  glue?: Promise<Glue>;
}
const g = globalThis as typeof globalThis & { __supportSchemaEngine?: EngineModuleCache };
const cache: EngineModuleCache = (g.__supportSchemaEngine ??= {});

/** A require() rooted at `from` (default: the project root), immune to bundler rewriting. */
export function runtimeRequire(from: string = projectRoot()): NodeJS.Require {
  const { createRequire } = process.getBuiltinModule("node:module") as typeof import("node:module");
  return createRequire(path.join(from, "package.json"));
}

/** The .wasm to run: prisma's exact engine when present, else the one beside the glue. */
export function schemaEngineWasmPath(): string {
  const req = runtimeRequire();
  try {
    const fromCli = path.join(path.dirname(req.resolve("prisma/package.json")), "build", "schema_engine_bg.wasm");
    if (fs.existsSync(fromCli)) return fromCli;
  } catch {
    /* prisma CLI not installed (production install without devDependencies) */
  }
  return path.join(path.dirname(req.resolve("@prisma/schema-engine-wasm/schema_engine_bg")), "schema_engine_bg.wasm");
}

/** Loads and starts the WASM module once per process; returns the wasm-bindgen glue. */
export function loadSchemaEngineModule(): Promise<Glue> {
  cache.glue ??= (async () => {
    const req = runtimeRequire();
    const gluePath = req.resolve("@prisma/schema-engine-wasm/schema_engine_bg");
    const glue = (await import(/* webpackIgnore: true */ /* turbopackIgnore: true */ pathToFileURL(gluePath).href)) as Glue & {
      __wbg_set_wasm(exports: WebAssembly.Exports): void;
    };
    const bytes = fs.readFileSync(schemaEngineWasmPath());
    const { instance } = await WebAssembly.instantiate(bytes, { "./schema_engine_bg.js": glue as unknown as WebAssembly.ModuleImports });
    glue.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return glue;
  })().catch((err: unknown) => {
    cache.glue = undefined;
    throw err;
  });
  return cache.glue;
}

/** An engine bound to one adapter factory, with its error registry and log lines. */
export interface EngineHandle {
  engine: SchemaEngine;
  errorRegistry: ErrorRegistry;
  logs: string[];
  /** Runs an engine call, replacing `External error id#N` by the adapter's real error. */
  call<T>(fn: (engine: SchemaEngine) => Promise<T>): Promise<T>;
  /** Frees the engine (the adapters' pools are the factory owner's to close). */
  free(): void;
}

/** Creates a SchemaEngine for the given schema text over a migration-aware adapter factory. */
export async function openSchemaEngine(schemaText: string, factory: SqlMigrationAwareDriverAdapterFactory): Promise<EngineHandle> {
  const glue = await loadSchemaEngineModule();
  const bound = bindMigrationAwareSqlAdapterFactory(factory);
  const logs: string[] = [];
  const engine = await glue.SchemaEngine.new({ datamodels: [["schema.prisma", schemaText]] }, (line: string) => logs.push(line), bound);
  const call = async <T>(fn: (e: SchemaEngine) => Promise<T>): Promise<T> => {
    try {
      return await fn(engine);
    } catch (err) {
      throw surfaceError(err, bound.errorRegistry);
    }
  };
  return {
    engine,
    errorRegistry: bound.errorRegistry,
    logs,
    call,
    free: () => {
      try {
        engine.free();
      } catch {
        /* already freed */
      }
    },
  };
}

/** Turns the engine's `External error id#N` into the registered JS error (message + cause). */
export function surfaceError(err: unknown, registry: ErrorRegistry): Error {
  const message = err instanceof Error ? err.message : typeof err === "string" ? err : JSON.stringify(err);
  const ids = [...message.matchAll(/id#(\d+)/g)].map((m) => Number(m[1]));
  const real = ids.map((id) => registry.consumeError(id)?.error).filter((e) => e !== undefined);
  if (real.length === 0) return err instanceof Error ? err : new Error(message);
  const detail = real.map((e) => (e instanceof Error ? e.message : String(e))).join("; ");
  return new Error(`${message}\n  caused by: ${detail}`, { cause: real[0] });
}

/**
 * Wraps an adapter so executeScript sends the whole script as ONE simple-protocol query (atomic, and
 * safe for `;` inside string literals and function bodies) and is awaited. adapter-pg 7.10.1 splits on
 * `;`; pglite-prisma-adapter fires `exec` without awaiting it, so a failing script looks applied.
 */
export function wholeScriptAdapter(adapter: SqlDriverAdapter, runScript: (script: string) => Promise<void>): SqlDriverAdapter {
  return new Proxy(adapter, {
    get(target, key) {
      if (key === "executeScript") return runScript;
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Maps a PostgreSQL error (pg or PGlite) to the adapter error the engine understands. */
export function toDriverAdapterError(err: unknown): unknown {
  const e = err as { code?: unknown; severity?: unknown; message?: unknown; detail?: unknown; column?: unknown; hint?: unknown };
  if (typeof e?.code === "string" && typeof e.message === "string") {
    return new DriverAdapterError({
      kind: "postgres",
      code: e.code,
      severity: typeof e.severity === "string" ? e.severity : "ERROR",
      message: e.message,
      detail: typeof e.detail === "string" ? e.detail : undefined,
      column: typeof e.column === "string" ? e.column : undefined,
      hint: typeof e.hint === "string" ? e.hint : undefined,
    });
  }
  return err;
}
