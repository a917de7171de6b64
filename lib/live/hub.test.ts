// The in-memory fan-out's waits (lib/live/hub): a wait ends when its caller's signal aborts — also when it had
// aborted before the wait began (the client left while the caller was reading), without holding a waiter.
import { describe, expect, it } from "vitest";
import { liveWaiters, waitForFeed } from "./hub";

describe("waiting for the feed", () => {
  it("with a signal that has already aborted: answers at once and leaves no waiter behind", async () => {
    const left = new AbortController();
    left.abort();
    const started = Date.now();
    const how = await waitForFeed(
      { tenantId: "t-1", conversationId: "c-1" },
      { timeoutMs: 10_000, fallbackMs: 10_000, signal: left.signal },
    );
    expect(how).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(1000);
    expect(liveWaiters()).toBe(0);
  });
});
