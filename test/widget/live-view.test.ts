import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { WidgetMessage, WidgetView } from "@/lib/widget/api-types";
import { afterCallbacks, type Frame, frameReader, runAfterCallbacks, views, type WidgetRoutes, widgetRoutes } from "../widget-routes";

vi.mock("next/server", async (original) => ({
  ...(await original<typeof import("next/server")>()),
  after: (fn: () => unknown) => afterCallbacks.push(fn),
}));

// GET /events?view=1&after=<seq>: the stream carries the customer's view itself — a `view` frame when it opens and
// whenever it changed — so the widget never fetches the view after an event. Without `view=1` the stream
// is as it always was (an id'd frame per event), for a widget page loaded before this.
let w: WidgetRoutes;
beforeAll(async () => {
  w = await widgetRoutes();
});
afterAll(async () => {
  await runAfterCallbacks();
  await w.close();
});

const hasAgentReply = (frames: Frame[]) => views(frames).some((v) => v.messages.some((m) => m.from === "agent"));

describe("the widget's live stream with views", () => {
  it("opens with the view after `after`, then sends it whenever it changed, with only the messages not yet sent", async () => {
    const { body: session } = await w.start({ ip: "198.51.100.10" });
    const greeting = session.view.lastSeq as number;
    const abort = new AbortController();
    const res = await w.events(session.token, { query: `view=1&after=${greeting}`, cursor: session.cursor, signal: abort.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const stream = frameReader(res);

    // The view when it opens: nothing new after the greeting yet; its id is the newest event the widget knew of.
    const [first] = views(await stream.until((f) => views(f).length >= 1));
    expect(first).toMatchObject({ conversationId: session.view.conversationId, lastSeq: greeting, messages: [] });
    expect(stream.frames[0]!.id).toBe(session.cursor);

    expect((await w.send(session.token, { text: "Where is my order A-1001?" }, { ip: "198.51.100.10" })).status).toBe(202);
    await runAfterCallbacks(); // the agent answers
    await stream.until(hasAgentReply);
    abort.abort();

    // Only view frames (no frame per event), sent when the view changed, each with the newest event id it held.
    const frames = stream.frames;
    expect(frames.every((f) => f.event === "view")).toBe(true);
    const ids = frames.map((f) => BigInt(f.id!));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(ids.at(-1)!).toBeGreaterThan(BigInt(session.cursor));

    // Each message is sent once, in order, and together they are what GET /conversation shows after the greeting.
    const sent: WidgetMessage[] = views(frames).flatMap((v) => v.messages);
    const seqs = sent.map((m) => m.seq);
    expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
    const fetched = (await w.view(session.token)).body.view as WidgetView;
    expect(sent).toEqual(fetched.messages.filter((m) => m.seq > greeting && m.seq <= sent.at(-1)!.seq));
    expect(sent.map((m) => m.from)).toEqual(expect.arrayContaining(["customer", "agent"]));
    // A view frame says what the customer's view says, and nothing else (no internal data).
    expect(Object.keys(views(frames).at(-1)!).sort()).toEqual(Object.keys(fetched).sort());
  });

  it("a stream reopened with the widget's last seq starts from there: nothing is sent twice, nothing is missed", async () => {
    const { body: session } = await w.start({ ip: "198.51.100.11" });
    expect((await w.send(session.token, { text: "Where is my order A-1001?" }, { ip: "198.51.100.11" })).status).toBe(202);
    await runAfterCallbacks();
    const all = (await w.view(session.token)).body.view as WidgetView;
    const middle = all.messages.at(-2)!.seq; // the widget has everything up to the customer's message
    const abort = new AbortController();
    const stream = frameReader(await w.events(session.token, { query: `view=1&after=${middle}`, signal: abort.signal }));
    const [first] = views(await stream.until((f) => views(f).length >= 1));
    abort.abort();
    expect(first!.messages).toEqual(all.messages.filter((m) => m.seq > middle));
    expect(first!.lastSeq).toBe(all.lastSeq);
  });

  it("without view=1 the stream sends a frame per event, as before", async () => {
    const { body: session } = await w.start({ ip: "198.51.100.12" });
    const abort = new AbortController();
    const stream = frameReader(await w.events(session.token, { cursor: session.cursor, signal: abort.signal }));
    expect((await w.send(session.token, { text: "Where is my order A-1001?" }, { ip: "198.51.100.12" })).status).toBe(202);
    await runAfterCallbacks();
    await stream.until((f) => f.some((x) => x.event === "message.created" && x.id !== undefined));
    abort.abort();
    expect(stream.frames.some((f) => f.event === "view")).toBe(false);
    for (const f of stream.frames.filter((x) => x.event !== "draft"))
      expect(Object.keys(JSON.parse(f.data))).toEqual(f.event === "message.created" ? ["seq"] : []);
  });

  it("refuses a malformed `after` and a token that opens nothing, before streaming anything", async () => {
    const { body: session } = await w.start({ ip: "198.51.100.13" });
    for (const after of ["-1", "x", "1.5", "99999999999"]) {
      const res = await w.events(session.token, { query: `view=1&after=${after}` });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ code: "INVALID_INPUT", message: "after must be a message number." });
    }
    const stranger = await w.events("not-a-token-of-this-shop-at-all", { query: "view=1&after=0" });
    expect(stranger.status).toBe(404);
  });

  it("refuses an event cursor past PostgreSQL's bigint with 400, not a stream that fails at its first read", async () => {
    const { body: session } = await w.start({ ip: "198.51.100.14" });
    const abort = new AbortController();
    const res = await w.events(session.token, { cursor: "9999999999999999999", signal: abort.signal });
    abort.abort();
    expect(res.status).toBe(400);
  });
});

describe("a message's answer", () => {
  it("carries the view from the customer's message on (not the whole conversation), and notes the sender's address", async () => {
    const { body: session } = await w.start({ ip: "198.51.100.20" });
    const first = await w.send(session.token, { text: "Where is my order A-1001?" }, { ip: "198.51.100.20" });
    expect(first.status).toBe(202);
    await runAfterCallbacks();
    const before = ((await w.view(session.token)).body.view as WidgetView).lastSeq;
    const second = await w.send(session.token, { text: "And A-1002?" }, { ip: "203.0.113.99" });
    expect(second.status).toBe(202);
    const view = second.body.view as WidgetView;
    expect(view.messages.map((m) => [m.from, m.text])).toEqual([["customer", "And A-1002?"]]);
    expect(view.messages[0]!.seq).toBe(before + 1);
    expect(view.lastSeq).toBe(before + 1);
    // Identity checks count attempts per address on the conversation: the latest sender's is there.
    const conversation = await w.tdb.prisma.conversation.findUniqueOrThrow({ where: { id: session.view.conversationId } });
    expect(conversation.clientIp).toBe("203.0.113.99");
    await runAfterCallbacks();
  });
});
