// The benchmarks print how fast the machine was (scripts/machine-speed.ts) so that runs of different hours can be
// compared: that only holds while the timed work stays the same, which its digest pins.
import { describe, expect, it } from "vitest";
import { describeKernelCosts, describeMachineSpeed, kernelCosts, machineSpeed } from "@/scripts/machine-speed";

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
