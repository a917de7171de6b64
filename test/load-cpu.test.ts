// `npm run load` splits the chat phase's CPU by process group (scripts/load/cpu.ts): a group counts its leaders'
// whole trees, including descendants that exited during the phase, and nothing outside them.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { machineCpuMs, startCpuMeter, treeCpuMs } from "@/scripts/load/cpu";
import { thousands } from "@/scripts/load/stats";
import { procStat } from "@/scripts/proc";

const linux = process.platform === "linux";
const started: ChildProcess[] = [];
afterEach(() => {
  for (const c of started.splice(0)) c.kill("SIGKILL");
});

/** A node process that starts a child burning `burnMs` of CPU, waits for it to exit, then waits for stdin to end. */
function parentOfBurner(burnMs: number): ChildProcess {
  // Burns CPU time, not wall time: on a busy machine it still uses what it is asked to.
  const burner = `for (;;) { const u = process.cpuUsage(); if (u.user + u.system >= ${burnMs * 1000}) break; }`;
  const parent = `
    const { spawn } = require("node:child_process");
    const c = spawn(process.execPath, ["-e", ${JSON.stringify(burner)}], { stdio: "ignore" });
    c.on("exit", () => process.stdout.write("burned\\n"));
    process.stdin.resume();`;
  const child = spawn(process.execPath, ["-e", parent], { stdio: ["pipe", "pipe", "inherit"] });
  started.push(child);
  return child;
}

describe.runIf(linux)("load CPU split", () => {
  it("reads a process's own and reaped children's time; a name with spaces and parentheses parses", () => {
    const me = procStat(process.pid)!;
    expect(me.pid).toBe(process.pid);
    expect(me.ppid).toBe(process.ppid);
    expect(me.ownMs).toBeGreaterThan(0);
    expect(procStat(2 ** 22 + 7)).toBeNull(); // beyond pid_max: no such process
  });

  it("counts a descendant that burned CPU and exited within the phase in its leader's group, and not in another", async () => {
    const idle = parentOfBurner(0);
    await once(idle.stdout!, "data"); // its child has come and gone before the phase
    const busy = parentOfBurner(400);
    const meter = startCpuMeter({ busy: () => [busy.pid!], idle: () => [idle.pid!] });
    await once(busy.stdout!, "data"); // the burner exited: its time is now in its parent's children's time
    const split = meter.stop();
    const of = (name: string) => split.byGroup.find((g) => g.name === name)!.cpuMs;
    expect(of("busy")).toBeGreaterThanOrEqual(300);
    expect(of("idle")).toBeLessThan(100);
    expect(split.byGroup.map((g) => g.name)).toEqual(["busy", "idle", "load driver"]);
    expect(split.machine!.busyMs).toBeGreaterThanOrEqual(of("busy") * 0.5); // the machine saw it too (tick granularity)
  });

  it("a tree is its leaders and every live descendant; an unknown leader counts nothing", () => {
    const table = [
      { pid: 1, ppid: 0, ownMs: 5, childrenMs: 0 },
      { pid: 10, ppid: 1, ownMs: 100, childrenMs: 20 },
      { pid: 11, ppid: 10, ownMs: 30, childrenMs: 0 },
      { pid: 12, ppid: 11, ownMs: 7, childrenMs: 0 },
      { pid: 20, ppid: 1, ownMs: 1000, childrenMs: 0 },
    ];
    expect(treeCpuMs([10], table)).toBe(157);
    expect(treeCpuMs([10, 11], table)).toBe(157); // a leader inside another's tree is not counted twice
    expect(treeCpuMs([99], table)).toBe(0);
  });

  it("the machine's CPU: busy within total", () => {
    const m = machineCpuMs()!;
    expect(m.totalMs).toBeGreaterThan(0);
    expect(m.busyMs).toBeGreaterThan(0);
    expect(m.busyMs).toBeLessThanOrEqual(m.totalMs);
  });
});

describe("the load report's counts", () => {
  it("names the queue's size as it was asked, not a fixed 100k", () => {
    expect(thousands(100_000)).toBe("100k");
    expect(thousands(1_000)).toBe("1k");
    expect(thousands(2_500)).toBe("2,500");
    expect(thousands(999)).toBe("999");
  });
});
