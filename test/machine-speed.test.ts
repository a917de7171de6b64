// The benchmarks print how fast the machine was (scripts/machine-speed.ts) so that runs of different hours can be
// compared: that only holds while the timed work stays the same, which its digest pins.
import { describe, expect, it } from "vitest";
import {
  describeKernelCosts,
  describeMachineSpeed,
  hypervisorFrom,
  hypervisorNote,
  kernelCosts,
  machineHypervisor,
  machineSpeed,
} from "@/scripts/machine-speed";

describe("machine speed", () => {
  it("times the same fixed work every time: its digest is pinned, its rounds counted", () => {
    const a = machineSpeed(3);
    const b = machineSpeed(5);
    // Changing the work changes this digest: then the figures printed before are no longer comparable — say so in
    // the README when you change it.
    expect(a.digest).toBe("8e3f427e8d12b5eee088cfa160d581cc83d007b5f8bb8bd2469600f85a4aee0f");
    expect(b.digest).toBe(a.digest);
    expect(a.rounds).toBe(3);
    expect(b.rounds).toBe(5);
    expect(a.minMs).toBeGreaterThan(0);
    expect(a.medianMs).toBeGreaterThanOrEqual(a.minMs);
    expect(describeMachineSpeed(b)).toMatch(/^\d+\.\d\d ms a round \(median of 5; quickest \d+\.\d\d\)$/);
  });

  it("refuses a count of rounds that is not a positive whole number", () => {
    expect(() => machineSpeed(0)).toThrow(/positive whole number/);
    expect(() => machineSpeed(1.5)).toThrow(/positive whole number/);
  });
});

describe("kernel costs", () => {
  it("measures a page's first touch, a system call and a wake-up round trip, and prints them", async () => {
    const k = await kernelCosts();
    for (const v of [k.pageTouchUs, k.syscallUs, k.wakeRoundTripUs]) {
      expect(Number.isFinite(v)).toBe(true);
      expect(v).toBeGreaterThan(0);
    }
    // A wake-up round trip is two system calls at the least, and a thread switched in twice.
    expect(k.wakeRoundTripUs).toBeGreaterThan(k.syscallUs);
    expect(describeKernelCosts(k)).toMatch(
      /^a fresh page's first touch \d+\.\d\d µs, a system call \d+\.\d\d µs, a wake-up round trip between two threads \d+\.\d µs \(medians\)$/,
    );
  });
});

describe("hypervisor", () => {
  // Lines of a slow-kind VM's boot log (5 Dec 2026, 20:40), and of a KVM guest's.
  const pvmLog = [
    "[    0.000000] Hypervisor detected: PVM",
    "[    0.000023] pvm-pv: running under PVM (pv-lite)",
    "[    0.000246] pvm-pv: CR3 loads, local TLB flushes, HLT and MSR writes via hypercalls",
  ].join("\n");

  it("names the hypervisor the kernel detected at boot, with PVM's variant", () => {
    expect(hypervisorFrom(pvmLog, "fpu sse2 hypervisor lahf_lm")).toBe("PVM (pv-lite)");
    expect(hypervisorFrom("[    0.000000] Hypervisor detected: KVM\n", "fpu hypervisor")).toBe("KVM");
  });

  it("says what PVM means for the figures, and nothing for another hypervisor", () => {
    expect(hypervisorNote(hypervisorFrom(pvmLog, "fpu hypervisor"))).toMatch(/^under PVM, .* about twice the time it takes under KVM/);
    expect(hypervisorNote("KVM")).toBeNull();
    expect(hypervisorNote("none")).toBeNull();
  });

  it("falls back on the CPU's flags when the boot log is unreadable, and says when neither is", () => {
    expect(hypervisorFrom(null, "fpu sse2 hypervisor lahf_lm")).toBe("a hypervisor whose kind the boot log does not say");
    expect(hypervisorFrom("", "fpu sse2 lahf_lm")).toBe("none");
    expect(hypervisorFrom(null, null)).toMatch(/^unknown/);
  });

  it("reads this machine's without throwing", () => {
    expect(machineHypervisor()).toMatch(/\S/);
  });
});
