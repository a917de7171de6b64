import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { afterCallbacks, chunkedBody, runAfterCallbacks, type WidgetRoutes, widgetRoutes } from "../widget-routes";

vi.mock("next/server", async (original) => ({
  ...(await original<typeof import("next/server")>()),
  after: (fn: () => unknown) => afterCallbacks.push(fn),
}));

// Two attacks found by hand: a lone surrogate in a message (PostgreSQL's jsonb refuses it: it was a 500), and a body
// sent without a declared length (it was read whole before the 32 kB limit applied).
let w: WidgetRoutes;
beforeAll(async () => {
  w = await widgetRoutes();
});
afterAll(async () => {
  await runAfterCallbacks();
  await w.close();
});

describe("widget message bodies", () => {
  it("a lone surrogate is a 400 with a clear message, and nothing is stored", async () => {
    const { body: session } = await w.start();
    for (const text of ["\ud800", "hello \udfff there", "ok \ud83d"]) {
      const res = await w.send(session.token, JSON.stringify({ text }), { raw: true });
      expect(res.status, JSON.stringify(text)).toBe(400);
      expect(res.body).toEqual({ code: "INVALID_INPUT", message: expect.stringMatching(/invalid character/) });
    }
    // A properly paired emoji is fine.
    expect((await w.send(session.token, { text: "thanks \ud83d\ude00" })).status).toBe(202);
    const view = await w.view(session.token);
    expect(view.body.view.messages.map((m: { text: string }) => m.text)).toEqual(["thanks 😀"]);
  });

  it("a chunked body is read only up to the limit, then refused with 413", async () => {
    const { body: session } = await w.start();
    const big = chunkedBody(2 * 1024 * 1024);
    const res = await w.send(session.token, big.stream, { raw: true });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ code: "TOO_LARGE", message: expect.stringMatching(/too large/) });
    // The stream's pull keeps at most a couple of chunks ahead of the reader.
    expect(big.pulled()).toBeLessThan(40 * 1024);
  });

  it("a declared length over the limit is refused before reading (413)", async () => {
    const { body: session } = await w.start();
    const res = await w.send(session.token, { text: "y".repeat(40_000) });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe("TOO_LARGE");
  });
});
