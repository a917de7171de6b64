/**
 * Linux's /proc, read for the benchmarks and test helpers: a process's parent and CPU time, and every process on the
 * machine. Elsewhere (no /proc) a process reads as gone and the list is empty.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";

/** Clock ticks per second, the unit of /proc's CPU times (100 on Linux almost everywhere). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export const ticksToMs = (ticks: number) => (ticks * 1000) / TICKS_PER_SECOND;

export interface ProcStat {
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
  return { pid, ppid: at(4), ownMs: ticksToMs(at(14) + at(15)), childrenMs: ticksToMs(at(16) + at(17)) };
}

/** Every process on the machine (those that exit while it is read are left out). */
export function allProcesses(): ProcStat[] {
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
