/**
 * Starts scripts/offline-model-server.ts in a process of its own (what `npm run bench`, `npm run load` and its test
 * call as Claude) and resolves with the port it listens on, which it prints on stdout once listening. It exits when
 * its stdin ends, so the pipe stays open while the caller runs.
 */
import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";

export function startOfflineModelServer(opts: Omit<SpawnOptions, "stdio"> & { stderr?: "inherit" | number } = {}): {
  child: ChildProcess;
  port: Promise<number>;
} {
  const { stderr = "inherit", ...rest } = opts;
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/offline-model-server.ts"], {
    ...rest,
    stdio: ["pipe", "pipe", stderr],
  });
  const port = new Promise<number>((resolve, reject) => {
    child.stdout!.once("data", (line) => resolve((JSON.parse(String(line)) as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`the offline model server exited (${code})`)));
  });
  return { child, port };
}
