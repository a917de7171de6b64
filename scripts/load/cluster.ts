/**
 * The real server for the load run: `next start` on two ports and two `npm run worker` processes, all on one
 * database, and the offline model in a process of its own. Each is started in its own process group, so stopping it stops its children too (npm → tsx → node,
 * next → its workers), and nothing else.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { nextStartArgs } from "../app-build";
import { startOfflineModelServer } from "../offline-model-process";

export interface Member {
  name: string;
  child: ChildProcess;
  log: string;
}

export class Cluster {
  readonly members: Member[] = [];

  constructor(
    private readonly root: string,
    private readonly logDir: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    fs.mkdirSync(logDir, { recursive: true });
  }

  private start(name: string, command: string, args: string[], extraEnv: Record<string, string> = {}): Member {
    const log = path.join(this.logDir, `${name}.log`);
    const out = fs.openSync(log, "w");
    const child = spawn(command, args, {
      cwd: this.root,
      env: { ...this.env, ...extraEnv },
      stdio: ["ignore", out, out],
      detached: true, // its own process group: see stop()
    });
    fs.closeSync(out);
    const member = { name, child, log };
    this.members.push(member);
    return member;
  }

  web(port: number): Member {
    return this.start(`web-${port}`, process.execPath, nextStartArgs(port), {
      PORT: String(port),
      NEXTAUTH_URL: `http://localhost:${port}`,
    });
  }

  /**
   * The offline model behind HTTP (scripts/offline-model-server.ts), as Claude is: its work happens outside the web
   * and worker processes, which reach it through the real SDK client (ANTHROPIC_BASE_URL). Resolves with its port.
   */
  async modelServer(): Promise<number> {
    const log = path.join(this.logDir, "model.log");
    const err = fs.openSync(log, "w");
    const { child, port } = startOfflineModelServer({ cwd: this.root, env: this.env, stderr: err, detached: true });
    fs.closeSync(err);
    this.members.push({ name: "model", child, log });
    return port.catch((e: Error) => {
      throw new Error(`${e.message}; see ${log}`);
    });
  }

  worker(n: number): Member {
    return this.start(`worker-${n}`, "npm", ["run", "--silent", "worker"]);
  }

  /** A member that exited early (e.g. a port taken), with the end of its log. */
  exited(): string | null {
    for (const m of this.members) {
      if (m.child.exitCode !== null || m.child.signalCode !== null) {
        const tail = fs.readFileSync(m.log, "utf8").split("\n").slice(-15).join("\n");
        return `${m.name} exited (${m.child.exitCode ?? m.child.signalCode}); end of ${m.log}:\n${tail}`;
      }
    }
    return null;
  }

  /** SIGTERM to each member's process group, SIGKILL to whatever is left after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    const alive = (m: Member) => m.child.exitCode === null && m.child.signalCode === null;
    const signal = (m: Member, sig: NodeJS.Signals) => {
      try {
        if (m.child.pid) process.kill(-m.child.pid, sig);
      } catch {
        // the group is already gone
      }
    };
    const running = this.members.filter(alive);
    for (const m of running) signal(m, "SIGTERM");
    const deadline = Date.now() + graceMs;
    while (running.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    for (const m of running) if (alive(m)) signal(m, "SIGKILL");
    // The group may outlive its leader (a child still closing): make sure it is gone.
    for (const m of running) signal(m, "SIGKILL");
  }
}

/** Waits until GET `url` answers 200, or fails with what the cluster said. */
export async function waitHealthy(url: string, cluster: Cluster, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = cluster.exited();
    if (dead) throw new Error(dead);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not become healthy within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
