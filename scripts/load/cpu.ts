/**
 * Where the load run's CPU went: the CPU time each group of processes (the web processes, the workers, PostgreSQL,
 * the model server, this driver) used over a phase, read from Linux's /proc, and the machine's busy share. A group
 * is its leaders and all their descendants; a descendant that exits during the phase is still counted, through its
 * parent's "children's time" (a process's CPU moves there when it is reaped). Elsewhere than Linux it measures
 * nothing and says so.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";

const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface ProcStat {
  pid: number;
  ppid: number;
  /** Own user + system time, and that of its reaped children, in ms. */
  ownMs: number;
  childrenMs: number;
}

/** /proc/<pid>/stat, or null when the process is gone. The name (field 2) may hold spaces and parentheses. */
export function procStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" "); // from field 3 (state) on
  const at = (n: number) => Number(fields[n - 3]);
  const ms = (ticks: number) => (ticks * 1000) / TICKS_PER_SECOND;
  return { pid, ppid: at(4), ownMs: ms(at(14) + at(15)), childrenMs: ms(at(16) + at(17)) };
}

function allProcesses(): ProcStat[] {
  let names: string[];
  try {
    names = fs.readdirSync("/proc");
  } catch {
    return [];
  }
  return names
    .filter((n) => /^\d+$/.test(n))
    .map((n) => procStat(Number(n)))
    .filter((s): s is ProcStat => s !== null);
}

/** CPU ms used so far by `leaders` and all their descendants (live ones, and through them the reaped ones). */
export function treeCpuMs(leaders: number[], table = allProcesses()): number {
  const children = new Map<number, ProcStat[]>();
  for (const s of table) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
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
  const ms = (ticks: number) => (ticks * 1000) / TICKS_PER_SECOND;
  return { busyMs: ms(total - idle), totalMs: ms(total) };
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
