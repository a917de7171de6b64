import { describe, expect, it } from "vitest";
import { sleep } from "./sleep";

async function took(wait: Promise<void>): Promise<number> {
  const started = performance.now();
  await wait;
  return performance.now() - started;
}

describe("sleep", () => {
  it("waits its time", async () => {
    expect(await took(sleep(50))).toBeGreaterThanOrEqual(45);
  });

  it("ends when its signal aborts, and at once when the signal has already aborted", async () => {
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 20);
    expect(await took(sleep(5000, stop.signal))).toBeLessThan(1000);
    expect(await took(sleep(5000, stop.signal))).toBeLessThan(50);
  });

  it("ends when the function it hands out is called", async () => {
    let stop: (() => void) | null = null;
    const wait = sleep(5000, undefined, (s) => {
      stop = s;
    });
    setTimeout(() => stop?.(), 20);
    expect(await took(wait)).toBeLessThan(1000);
  });
});
