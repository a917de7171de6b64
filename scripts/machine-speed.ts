/**
 * How fast this machine is right now, for the benchmarks' reports: a fixed piece of single-threaded work of the kind
 * the product does (JSON out and in, strings, small objects, a hash), timed over several rounds. This VM reports no
 * steal time and its load average says little about its host, yet the same code took 1.7–1.9 times the CPU in one
 * hour that it took in another: runs of different hours are compared through this figure, printed with each run.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { percentile } from "./load/stats";

/** One transcript-like document, the same every time (no randomness, no clock). */
function fixedDocument() {
  const messages = [];
  for (let i = 0; i < 40; i++) {
    messages.push({
      seq: i + 1,
      role: i % 2 ? "assistant" : "user",
      content: [
        { type: "text", text: `Message ${i}: where is my order A-${1000 + i}? It was due on the ${(i % 28) + 1}th.` },
        ...(i % 5 === 4 ? [{ type: "tool_use", id: `toolu_${i}`, name: "lookup_order", input: { order_number: `A-${1000 + i}` } }] : []),
      ],
    });
  }
  return { conversationId: "c_fixed", tenantId: "t_fixed", messages };
}

/** The work of one round; returns a digest so that nothing of it can be optimised away. */
function oneRound(): string {
  const hash = createHash("sha256");
  const doc = fixedDocument();
  for (let i = 0; i < 240; i++) {
    const text = JSON.stringify(doc);
    const back = JSON.parse(text) as typeof doc;
    back.messages.push({ seq: back.messages.length + 1, role: "user", content: [{ type: "text", text: `turn ${i}` }] });
    const counts = new Map<string, number>();
    for (const m of back.messages) for (const b of m.content) counts.set(b.type, (counts.get(b.type) ?? 0) + 1);
    hash.update(text).update(String(counts.get("text")));
  }
  return hash.digest("hex");
}

export interface MachineSpeed {
  /** the median time of one round, ms: the figure to compare */
  medianMs: number;
  /** the quickest round, ms */
  minMs: number;
  rounds: number;
  /** the work's digest: the same on every machine, so long as the work is the same */
  digest: string;
}

/** Times `rounds` rounds of the fixed work, after two that warm the code up. */
export function machineSpeed(rounds = 25): MachineSpeed {
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`rounds must be a positive whole number, not ${rounds}`);
  let digest = oneRound();
  oneRound();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    const d = oneRound();
    times.push(performance.now() - t0);
    if (d !== digest) throw new Error("the fixed work gave two different digests");
    digest = d;
  }
  return { medianMs: percentile(times, 50), minMs: Math.min(...times), rounds, digest };
}

/** The line the benchmarks print. */
export function describeMachineSpeed(s: MachineSpeed): string {
  return `${s.medianMs.toFixed(2)} ms a round (median of ${s.rounds}; quickest ${s.minMs.toFixed(2)})`;
}

/**
 * What crossing into the kernel costs here. The fixed work above does not tell VMs apart (it took 9.3–11.8 ms a round
 * both on the VM where the targets were met and on those where every statement took twice as long); these may: a
 * statement's round trip is system calls, a process woken on another core, and pages touched for the first time.
 * Printed since 5 Dec 2026 16:40, first on a VM of the slow kind (10.5 µs, 2.0 µs, 26 µs).
 */
export interface KernelCosts {
  /** writing the first byte of a fresh 4 KiB page (a minor page fault), µs */
  pageTouchUs: number;
  /** one read(2) of /dev/null through node's fs binding, µs */
  syscallUs: number;
  /** one thread waking another and being woken back (Atomics.wait / notify: two futex wake-ups), µs */
  wakeRoundTripUs: number;
}

/** Medians of a few rounds of each; about half a second in all. */
export async function kernelCosts(): Promise<KernelCosts> {
  // 64 MiB is above glibc's largest mmap threshold: every round maps fresh pages, none reused from the heap.
  const pageRounds: number[] = [];
  for (let r = 0; r < 3; r++) {
    const block = Buffer.allocUnsafeSlow(64 << 20);
    const t0 = performance.now();
    for (let i = 0; i < block.length; i += 4096) block[i] = 1;
    pageRounds.push(((performance.now() - t0) * 1000) / (block.length / 4096));
  }

  const fd = openSync("/dev/null", "r");
  const byte = Buffer.alloc(1);
  const callRounds: number[] = [];
  try {
    for (let r = 0; r < 5; r++) {
      const n = 20_000;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) readSync(fd, byte, 0, 1, null);
      callRounds.push(((performance.now() - t0) * 1000) / n);
    }
  } finally {
    closeSync(fd);
  }

  // Slot 0: the main thread's ping (1) or stop (2); slot 1: the worker's pong.
  const flags = new Int32Array(new SharedArrayBuffer(8));
  const worker = new Worker(
    `const { workerData } = require("node:worker_threads");
     const f = new Int32Array(workerData);
     for (;;) {
       Atomics.wait(f, 0, 0);
       if (Atomics.load(f, 0) === 2) break;
       Atomics.store(f, 0, 0);
       Atomics.store(f, 1, 1);
       Atomics.notify(f, 1);
     }`,
    { eval: true, workerData: flags.buffer },
  );
  const wakeRounds: number[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      worker.once("online", resolve);
      worker.once("error", reject);
    });
    for (let r = 0; r < 5; r++) {
      const n = 2_000;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        Atomics.store(flags, 1, 0);
        Atomics.store(flags, 0, 1);
        Atomics.notify(flags, 0);
        if (Atomics.wait(flags, 1, 0, 5_000) === "timed-out") throw new Error("the worker thread did not answer within 5 s");
      }
      wakeRounds.push(((performance.now() - t0) * 1000) / n);
    }
  } finally {
    Atomics.store(flags, 0, 2);
    Atomics.notify(flags, 0);
    await worker.terminate();
  }

  return { pageTouchUs: percentile(pageRounds, 50), syscallUs: percentile(callRounds, 50), wakeRoundTripUs: percentile(wakeRounds, 50) };
}

/** The line the benchmarks print. */
export function describeKernelCosts(k: KernelCosts): string {
  return `a fresh page's first touch ${k.pageTouchUs.toFixed(2)} µs, a system call ${k.syscallUs.toFixed(2)} µs, a wake-up round trip between two threads ${k.wakeRoundTripUs.toFixed(1)} µs (medians)`;
}

/**
 * Which hypervisor the machine runs under, as its kernel named it at boot ("Hypervisor detected: …" in the boot log).
 * A slow VM of 5 Dec 2026 (20:40) booted as a PVM guest ("running under PVM (pv-lite)"): virtualization without the
 * CPU's own support, where every return to user mode, CR3 load, TLB flush and HLT is a hypercall: the likeliest
 * reason its system calls, page faults and wake-ups cost what the kernel line shows (no quick VM's hypervisor was on
 * record when this was written). `null` inputs: not readable.
 */
export function hypervisorFrom(bootLog: string | null, cpuFlags: string | null): string {
  const named = bootLog?.match(/Hypervisor detected: ([^\n]+)/)?.[1]?.trim();
  if (named) {
    const variant = bootLog?.match(/running under PVM \(([^)]+)\)/)?.[1];
    return variant && named === "PVM" ? `PVM (${variant})` : named;
  }
  if (cpuFlags === null) return "unknown (neither the boot log nor /proc/cpuinfo could be read)";
  return /(^|\s)hypervisor(\s|$)/.test(cpuFlags) ? "a hypervisor whose kind the boot log does not say" : "none";
}

/**
 * What the hypervisor means for the figures, when it is known to matter: on one CPU (AMD EPYC family 26 model 2),
 * the same code measured about twice the time under PVM as under KVM (docs/performance.md, 6 Dec 2026 05:39 and
 * 08:17). Null for any other hypervisor.
 */
export function hypervisorNote(hypervisor: string): string | null {
  return hypervisor.startsWith("PVM")
    ? "under PVM, the same code on the same CPU has measured about twice the time it takes under KVM (docs/performance.md, 6 Dec 2026): read the targets with that in mind"
    : null;
}

/** The hypervisor of this machine (reads `dmesg`, which may need root, and /proc/cpuinfo; never throws). */
export function machineHypervisor(): string {
  let bootLog: string | null = null;
  try {
    bootLog = execFileSync("dmesg", { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 2_000, maxBuffer: 16 << 20 });
  } catch {
    bootLog = null;
  }
  let cpuFlags: string | null = null;
  try {
    cpuFlags = readFileSync("/proc/cpuinfo", "utf8").match(/^flags\s*:(.*)$/m)?.[1] ?? "";
  } catch {
    cpuFlags = null;
  }
  return hypervisorFrom(bootLog, cpuFlags);
}
