/**
 * Where the load run's CPU went: the CPU time each group of processes (the web processes, the workers, PostgreSQL,
 * the model server, this driver) used over a phase, read from Linux's /proc, and the machine's busy share. A group
 * is its leaders and all their descendants; a descendant that exits during the phase is still counted, through its
 * parent's "children's time" (a process's CPU moves there when it is reaped). Elsewhere than Linux it measures
 * nothing and says so.
 */
import fs from "node:fs";
import { allProcesses, type ProcStat, procStat, ticksToMs } from "../proc";

/** CPU ms used so far by `leaders` and all their descendants (live ones, and through them the reaped ones). */
export function treeCpuMs(leaders: number[], table = allProcesses()): number {
  const children = new Map<number, ProcStat[]>();
  for (const s of table) {
    const siblings = children.get(s.ppid);
    if (siblings) siblings.push(s);
    else children.set(s.ppid, [s]);
  }
  const byPid = new Map(table.map((s) => [s.pid, s]));
  const seen = new Set<number>();
  let total = 0;
  const visit = (s: ProcStat) => {
    if (seen.has(s.pid)) return;
    seen.add(s.pid);
    total += s.ownMs + s.childrenMs;
    for (const c of children.get(s.pid) ?? []) visit(c);
  };
  for (const pid of leaders) {
    const s = byPid.get(pid);
    if (s) visit(s);
  }
  return total;
}

/** The machine's CPU time so far, in ms summed over its cores: busy (not idle, not waiting for I/O) and in all. */
export function machineCpuMs(): { busyMs: number; totalMs: number } | null {
  let line: string | undefined;
  try {
    line = fs.readFileSync("/proc/stat", "utf8").split("\n")[0];
  } catch {
    return null;
  }
  if (!line?.startsWith("cpu ")) return null;
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const t = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = t.reduce((a, b) => a + b, 0);
  const idle = t[3]! + t[4]!;
  return { busyMs: ticksToMs(total - idle), totalMs: ticksToMs(total) };
}

/** What a group of processes is: its leaders, found again at each reading (a pid can only be known once started). */
export type Groups = Record<string, () => number[]>;

export interface CpuSplit {
  wallMs: number;
  /** CPU ms per group over the phase. This driver's own process is the group "load driver". */
  byGroup: Array<{ name: string; cpuMs: number }>;
  /** The whole machine over the phase (null where /proc/stat is not there). */
  machine: { busyMs: number; totalMs: number } | null;
}

/** Starts measuring; `stop()` returns what each group (and the machine) used since. */
export function startCpuMeter(groups: Groups): { stop(): CpuSplit } {
  const read = () => {
    const table = allProcesses();
    return Object.fromEntries(Object.entries(groups).map(([name, leaders]) => [name, treeCpuMs(leaders(), table)]));
  };
  const t0 = performance.now();
  const before = read();
  const driverBefore = process.cpuUsage();
  const machineBefore = machineCpuMs();
  return {
    stop() {
      const after = read();
      const driver = process.cpuUsage(driverBefore);
      const machineAfter = machineCpuMs();
      return {
        wallMs: performance.now() - t0,
        byGroup: [
          ...Object.keys(groups).map((name) => ({ name, cpuMs: Math.max(0, after[name]! - before[name]!) })),
          { name: "load driver", cpuMs: (driver.user + driver.system) / 1000 },
        ],
        machine:
          machineBefore && machineAfter
            ? { busyMs: machineAfter.busyMs - machineBefore.busyMs, totalMs: machineAfter.totalMs - machineBefore.totalMs }
            : null,
      };
    },
  };
}

/** The PostgreSQL server's main process, when it runs on this machine: the parent of the backend serving `client`. */
export function postmasterOf(backendPid: number): number | null {
  const backend = procStat(backendPid);
  if (!backend) return null; // on another machine (or in another PID namespace)
  let comm = "";
  try {
    comm = fs.readFileSync(`/proc/${backend.ppid}/comm`, "utf8").trim();
  } catch {
    return null;
  }
  return /postgres|postmaster/.test(comm) ? backend.ppid : null;
}
