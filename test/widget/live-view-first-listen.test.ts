import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { stopListeners } from "@/lib/db/listener";
import { listenerGeneration } from "@/lib/live/hub";
import type { HookSlot } from "../hook-after";
import { afterCallbacks, frameReader, runAfterCallbacks, views, type WidgetRoutes, widgetRoutes } from "../widget-routes";

vi.mock("next/server", async (original) => ({
  ...(await original<typeof import("next/server")>()),
  after: (fn: () => unknown) => afterCallbacks.push(fn),
}));

// The customer's view as read, with a hook the test arms to run once right after the next read: a commit between a
// stream's read and its first wait.
const afterViewRead = vi.hoisted((): HookSlot => ({ hook: null }));
vi.mock("@/lib/conversations/view", async (original) => {
  const real = await original<typeof import("@/lib/conversations/view")>();
  const { hookAfter } = await import("../hook-after");
  return { ...real, readCustomerView: hookAfter(real.readCustomerView, afterViewRead) };
});

// The widget's events route hands each wait the listener's generation as the stream's last read began
// (app/api/widget/[shop]/events/route.ts). This file's process has not listened yet when its stream opens: the
// stream reads its view, a message commits, and only then does the stream's first wait start the listener — nobody
// heard that commit. The wait ends at once, as the listener's coming up is a new generation, and the stream reads
// again; without the generation it would end quiet at the heartbeat and the message would come with the reopening.
let w: WidgetRoutes;
beforeAll(async () => {
  w = await widgetRoutes();
});
afterAll(async () => {
  await stopListeners();
  await runAfterCallbacks();
  await w.close();
});

describe("a widget's stream that read before its process listened", () => {
  it("reads again at once and sends the message committed before the listener listened", async () => {
    const ip = "198.51.100.15";
    const { body: session } = await w.start({ ip });
    const greeting = session.view.lastSeq as number;
    expect(listenerGeneration()).toBe(0); // nothing in this process has listened yet
    afterViewRead.hook = async () => {
      expect((await w.send(session.token, { text: "Is anyone there?" }, { ip })).status).toBe(202);
    };
    const abort = new AbortController();
    const stream = frameReader(await w.events(session.token, { query: `view=1&after=${greeting}`, signal: abort.signal }));
    try {
      const sent = () => views(stream.frames).flatMap((v) => v.messages);
      // Well within the stream's 10-second heartbeat.
      await stream.until(() => sent().some((m) => m.from === "customer" && m.text === "Is anyone there?"), 4000);
      expect(afterViewRead.hook).toBeNull(); // it ran, after the stream's opening read
      expect(listenerGeneration()).toBe(1);
    } finally {
      abort.abort();
    }
  });
});
