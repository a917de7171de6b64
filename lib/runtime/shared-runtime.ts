import type { RuntimeDeps } from "./deps";
import { createRuntime } from "./create-runtime";

const g = globalThis as typeof globalThis & { __supportRuntime?: Promise<RuntimeDeps> };

/** The web server's runtime, built once per process (and kept across dev reloads). */
export function getRuntime(): Promise<RuntimeDeps> {
  g.__supportRuntime ??= createRuntime({ role: "web" }).catch((err) => {
    g.__supportRuntime = undefined;
    throw err;
  });
  return g.__supportRuntime;
}
