import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { withLogContext } from "@/lib/log";
import { captureLogLines } from "@/test/log-lines";
import { OncePerWindow } from "./log-once";

describe("a line written once per client and window", () => {
  const lines = captureLogLines();
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());
  const say = { first: "over the limit", more: (n: number, s: number) => `over the limit: ${n} more in ${s} s` };

  it("the first occurrence with its request's ids; when the window has passed, how many more there were", () => {
    const once = new OncePerWindow(60_000, say);
    withLogContext({ requestId: "r1", tenantId: "t1", conversationId: "c1" }, () => {
      for (let i = 0; i < 5; i++) once.note("client-a", { limit: "x" });
    });
    expect(lines()).toEqual([expect.objectContaining({ msg: "over the limit", requestId: "r1", conversationId: "c1", limit: "x" })]);
    vi.advanceTimersByTime(59_999);
    expect(lines()).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(lines()[1]).toMatchObject({ msg: "over the limit: 4 more in 60 s", more: 4, tenantId: "t1", conversationId: "c1", limit: "x" });
    // The key itself (an address, a token) is never written.
    expect(JSON.stringify(lines())).not.toContain("client-a");
    // A new window starts with a line of its own; a window with nothing more closes without one.
    once.note("client-a", { limit: "x" });
    vi.advanceTimersByTime(60_000);
    expect(lines()).toHaveLength(3);
  });

  it("each client is a line of its own; past the most it counts at once, the others share one", () => {
    const once = new OncePerWindow(60_000, say, 5);
    once.note("a", {});
    once.note("b", {});
    expect(lines()).toHaveLength(2);
    for (let i = 0; i < 10; i++) once.note(`flood-${i}`, {});
    // Three more keys fit; the seven past them are counted together: one line for them, then one closing line.
    expect(lines()).toHaveLength(2 + 3 + 1);
    vi.advanceTimersByTime(60_000);
    expect(lines().at(-1)).toMatchObject({ msg: "over the limit: 6 more in 60 s", clients: "many" });
    expect(lines()).toHaveLength(2 + 3 + 2);
  });

  it("the closing line is no request's: it names the shop and conversation, not the first request's id", async () => {
    vi.useRealTimers(); // a real timer carries the context it was set in
    const once = new OncePerWindow(20, say);
    withLogContext({ requestId: "r9", tenantId: "t9", conversationId: "c9" }, () => {
      once.note("client-z", {});
      once.note("client-z", {});
    });
    await new Promise((r) => setTimeout(r, 80));
    expect(lines()).toHaveLength(2);
    expect(lines()[1]).toMatchObject({ more: 1, tenantId: "t9", conversationId: "c9" });
    expect(lines()[1]!.requestId).toBeUndefined();
  });
});
