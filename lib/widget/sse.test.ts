import { describe, expect, it } from "vitest";
import { SseParser } from "./sse-parser";
import { eventFrame, followEvents, followViews, parseCursor } from "./event-stream";
import { parseParentMessage } from "./bridge-protocol";

describe("SseParser", () => {
  it("parses frames split anywhere, keeps the last id, skips comments", () => {
    const p = new SseParser();
    const text =
      'retry: 1500\n: connected\n\nid: 7\nevent: message.created\ndata: {"seq":1}\n\n: ping\n\nid: 8\r\nevent: run.phase\r\ndata: {}\r\n\r\n';
    const out = [];
    for (let i = 0; i < text.length; i += 3) out.push(...p.push(text.slice(i, i + 3)));
    expect(out).toEqual([
      { id: "7", event: "message.created", data: '{"seq":1}' },
      { id: "8", event: "run.phase", data: "{}" },
    ]);
  });
});

describe("event stream", () => {
  it("parses cursors strictly", () => {
    expect(parseCursor(null)).toBe(0n);
    expect(parseCursor("")).toBe(0n);
    expect(parseCursor("42")).toBe(42n);
    expect(parseCursor("-1")).toBeNull();
    expect(parseCursor("1e3")).toBeNull();
    expect(parseCursor("12; drop")).toBeNull();
    // An event id is a PostgreSQL bigint: nothing past its largest value is a cursor.
    expect(parseCursor("9223372036854775807")).toBe(9223372036854775807n);
    expect(parseCursor("9223372036854775808")).toBeNull();
    expect(parseCursor("9999999999999999999")).toBeNull();
  });

  it("frames carry the id and type, and only the seq of message events", () => {
    expect(eventFrame({ id: 5n, type: "message.created", data: { seq: 3, author: "AGENT" } })).toBe(
      'id: 5\nevent: message.created\ndata: {"seq":3}\n\n',
    );
    expect(eventFrame({ id: 6n, type: "handoff.updated", data: { handoffId: "h1", status: "APPROVED" } })).toBe(
      "id: 6\nevent: handoff.updated\ndata: {}\n\n",
    );
    expect(eventFrame({ id: 7n, type: "weird\ninjected: x", data: {} })).toBe("id: 7\nevent: update\ndata: {}\n\n");
  });

  it("streams everything after the cursor in order, and stops when the client goes away", async () => {
    const feed = [1n, 2n, 3n, 4n].map((id) => ({ id, type: "message.created", data: { seq: Number(id) } }));
    const asked: bigint[] = [];
    const abort = new AbortController();
    const stream = followEvents({
      cursor: 1n,
      signal: abort.signal,
      fetch: async (after) => {
        asked.push(after);
        return feed.filter((e) => e.id > after);
      },
      wait: (ms, signal) =>
        new Promise((r) => {
          const t = setTimeout(() => r("timeout"), Math.min(ms, 20));
          signal.addEventListener("abort", () => {
            clearTimeout(t);
            r("timeout");
          });
        }),
    });
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser();
    const ids: string[] = [];
    while (ids.length < 3) {
      const { value, done } = await reader.read();
      if (done) break;
      ids.push(...parser.push(decoder.decode(value, { stream: true })).map((e) => e.id!));
    }
    abort.abort();
    expect(ids).toEqual(["2", "3", "4"]);
    expect(asked[0]).toBe(1n);
    // The next poll continues from the last id sent, not from the start.
    const { done } = await reader.read().then(async (r) => (r.done ? r : reader.read()));
    expect(done).toBe(true);
    expect(asked.slice(1).every((c) => c === 4n)).toBe(true);
  });

  /** A feed of one event followed from the start, counting its reads; `wait` as given. */
  function countedFeed(wait: Parameters<typeof followEvents>[0]["wait"]) {
    const feed: Array<{ id: bigint; type: string; data: unknown }> = [{ id: 1n, type: "message.created", data: { seq: 1 } }];
    const counted = { reads: 0 };
    const abort = new AbortController();
    const stream = followEvents({
      cursor: 0n,
      signal: abort.signal,
      fetch: async (after) => {
        counted.reads++;
        return feed.filter((e) => e.id > after);
      },
      wait,
    });
    return { feed, counted, abort, stream };
  }

  it("waits for a notification between reads instead of polling, and reads at once when one arrives", async () => {
    let notify!: () => void;
    const { feed, counted, abort, stream } = countedFeed(() => new Promise((r) => (notify = () => r("notified"))));
    const reader = stream.getReader();
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const next = async () => {
      for (;;) {
        const { value } = await reader.read();
        const frames = parser.push(decoder.decode(value, { stream: true })).filter((e) => e.id);
        if (frames.length) return frames.map((e) => e.id);
      }
    };
    expect(await next()).toEqual(["1"]);
    await new Promise((r) => setTimeout(r, 50));
    expect(counted.reads).toBe(1); // no polling while nothing is notified
    feed.push({ id: 2n, type: "message.created", data: { seq: 2 } });
    notify();
    expect(await next()).toEqual(["2"]);
    abort.abort();
  });

  it("reads nothing after a quiet wake, and reads again after a timeout (no listener: it polls)", async () => {
    const wakes: Array<"quiet" | "timeout"> = ["quiet", "quiet", "quiet", "timeout"];
    const { counted, abort, stream } = countedFeed(
      (_ms, signal) =>
        new Promise((r) => {
          const how = wakes.shift();
          if (how) setTimeout(() => r(how), 5);
          else signal.addEventListener("abort", () => r("timeout"));
        }),
    );
    const reader = stream.getReader();
    void (async () => {
      while (!(await reader.read()).done);
    })();
    await new Promise((r) => setTimeout(r, 100));
    expect(wakes).toEqual([]);
    expect(counted.reads).toBe(2); // when it opened, and after the timeout — none after the three quiet wakes
    abort.abort();
  });

  it("reads again while an announced event is held back, without waiting for another notification", async () => {
    // Event 1 committed and was announced, but an older transaction still in flight keeps it out of reads for 1 s
    // (more than the three re-reads after a notification); no further notification comes.
    const visibleAt = Date.now() + 1_000;
    const feed = [{ id: 1n, type: "message.created", data: { seq: 1 } }];
    let waits = 0;
    let waitsBeforeRead = -1;
    const abort = new AbortController();
    const stream = followEvents({
      cursor: 0n,
      signal: abort.signal,
      fetch: async (after) => {
        if (Date.now() < visibleAt) return [];
        if (waitsBeforeRead < 0) waitsBeforeRead = waits;
        return feed.filter((e) => e.id > after);
      },
      wait: (_ms, signal) => {
        waits++;
        return new Promise((r) => signal.addEventListener("abort", () => r("timeout")));
      },
      announced: () => 1n,
    });
    const reader = stream.getReader();
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const started = Date.now();
    let ids: string[] = [];
    while (!ids.length) {
      const { value } = await reader.read();
      ids = parser.push(decoder.decode(value, { stream: true })).flatMap((e) => (e.id ? [e.id] : []));
    }
    expect(ids).toEqual(["1"]);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(waitsBeforeRead).toBe(0); // it never went back to waiting while the event was owed
    abort.abort();
  });
});

describe("parseParentMessage", () => {
  it.each([
    [
      { source: "support-widget", type: "init", identity: "a.b.c", open: true, focus: false },
      { source: "support-widget", type: "init", identity: "a.b.c", open: true, focus: false },
    ],
    [
      { source: "support-widget", type: "identify", identity: null },
      { source: "support-widget", type: "identify", identity: null },
    ],
    [{ source: "support-widget", type: "identify", identity: 42 }, null],
    [{ source: "other", type: "init", identity: null }, null],
    [{ source: "support-widget", type: "eval", code: "alert(1)" }, null],
    ["support-widget", null],
    [null, null],
  ])("%j", (input, expected) => {
    expect(parseParentMessage(input)).toEqual(expected);
  });
});

describe("drafts in the event stream", () => {
  it("sends the reply being written as id-less `draft` frames when it changes, and its end once", async () => {
    const drafts = [
      { runId: "r1", text: "Hello.", n: 1 },
      { runId: "r1", text: "Hello. Your parcel left on Monday.", n: 2 },
      { runId: "r1", text: null, n: 3 },
    ];
    let step = 0;
    const abort = new AbortController();
    const stream = followEvents({
      cursor: 0n,
      signal: abort.signal,
      fetch: async () => [],
      wait: () => new Promise((r) => setTimeout(() => r("notified"), 5)),
      draft: () => drafts[Math.min(step++ >> 1, drafts.length - 1)]!,
    });
    const reader = stream.getReader();
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const got: Array<{ id: string | null; event: string; data: string }> = [];
    while (got.length < 3) {
      const { value } = await reader.read();
      got.push(...parser.push(decoder.decode(value, { stream: true })));
    }
    abort.abort();
    expect(got.map((e) => [e.id, e.event, JSON.parse(e.data).text])).toEqual([
      [null, "draft", "Hello."],
      [null, "draft", "Hello. Your parcel left on Monday."],
      [null, "draft", null],
    ]);
  });

  it("a stream that never showed a draft does not announce its end", async () => {
    const abort = new AbortController();
    const stream = followEvents({
      cursor: 0n,
      signal: abort.signal,
      fetch: async () => [],
      wait: () => new Promise((r) => setTimeout(() => r("timeout"), 5)),
      draft: () => ({ runId: "r1", text: null, n: 9 }),
    });
    const reader = stream.getReader();
    setTimeout(() => abort.abort(), 60);
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).not.toContain("event: draft");
  });
});

describe("the view stream", () => {
  /** A fake conversation: its view is `state`; `announce()` is an event's notification, `wait` resolves on it. */
  function fakeConversation() {
    const state = { status: "idle", owner: null, verified: false, pendingApprovals: 0, lastSeq: 2, messages: [] as number[] };
    let announced = 0n;
    let wake: ((how: "notified" | "quiet" | "timeout") => void) | null = null;
    let draft: { runId: string; text: string | null; n: number } | null = null;
    const reads: number[] = [];
    let duringRead: (() => void) | null = null;
    const abort = new AbortController();
    const stream = followViews({
      after: 2,
      signal: abort.signal,
      read: async (afterSeq) => {
        reads.push(afterSeq);
        const view = { ...state, messages: state.messages.filter((s) => s > afterSeq) };
        const cursor = announced;
        const run = duringRead;
        duringRead = null;
        run?.(); // something committed while the view was being read (after its snapshot)
        return { view, cursor };
      },
      wait: (_ms, signal) =>
        new Promise((r) => {
          wake = r;
          signal.addEventListener("abort", () => r("timeout"));
        }),
      announced: () => announced,
      draft: () => draft,
    });
    const reader = stream.getReader();
    const parser = new SseParser();
    const decoder = new TextDecoder();
    const frames: Array<{ id: string | null; event: string; data: string }> = [];
    return {
      state,
      reads,
      abort,
      frames,
      commit(change: () => void) {
        change();
        announced += 1n;
      },
      notify(how: "notified" | "quiet" | "timeout" = "notified") {
        const w = wake;
        wake = null;
        w?.(how);
      },
      setDraft(d: typeof draft) {
        draft = d;
      },
      whileReading(fn: () => void) {
        duringRead = fn;
      },
      async next(count: number) {
        while (frames.length < count) {
          const { value, done } = await reader.read();
          if (done) throw new Error("ended");
          frames.push(...(parser.push(decoder.decode(value, { stream: true })) as typeof frames));
        }
        return frames;
      },
      settled: () => new Promise((r) => setTimeout(r, 20)),
    };
  }

  it("sends the view when it opens and after an event, only the new messages, and nothing when nothing changed", async () => {
    const c = fakeConversation();
    await c.next(1);
    expect(JSON.parse(c.frames[0]!.data)).toMatchObject({ lastSeq: 2, messages: [] });
    c.commit(() => {
      c.state.messages.push(3);
      c.state.lastSeq = 3;
      c.state.status = "working";
    });
    c.notify();
    await c.next(2);
    expect(JSON.parse(c.frames[1]!.data)).toMatchObject({ status: "working", lastSeq: 3, messages: [3] });
    expect(c.frames[1]!.id).toBe("1");
    expect(c.reads).toEqual([2, 2]);
    // A periodic wake with nothing new: read (after what was sent), but nothing sent.
    c.notify("timeout");
    await c.settled();
    expect(c.reads).toEqual([2, 2, 3]);
    expect(c.frames).toHaveLength(2);
    // A quiet wake (the listener heard nothing for this conversation, and never lost its connection): nothing can
    // have changed, so nothing is read — an open widget at rest costs the database nothing between its reconnects.
    c.notify("quiet");
    await c.settled();
    c.notify("quiet");
    await c.settled();
    expect(c.reads).toEqual([2, 2, 3]);
    expect(c.frames).toHaveLength(2);
    // A change besides the messages (a person took over) is sent.
    c.commit(() => {
      c.state.status = "with_person";
      c.state.owner = "Raj" as never;
    });
    c.notify();
    await c.next(3);
    expect(JSON.parse(c.frames[2]!.data)).toMatchObject({ status: "with_person", owner: "Raj", messages: [] });
    c.abort.abort();
  });

  it("an event announced while the view was being read is read at once, without waiting for a notification", async () => {
    const c = fakeConversation();
    await c.next(1);
    c.whileReading(() =>
      c.commit(() => {
        c.state.messages.push(3);
        c.state.lastSeq = 3;
      }),
    );
    c.notify(); // a wake whose read changes nothing; the message committed meanwhile is announced, not notified
    await c.next(2);
    expect(JSON.parse(c.frames[1]!.data)).toMatchObject({ messages: [3] });
    expect(c.reads).toEqual([2, 2, 2]);
    c.abort.abort();
  });

  it("a draft alone sends the draft without reading the view; a draft that ended is sent after a view read", async () => {
    const c = fakeConversation();
    await c.next(1);
    c.setDraft({ runId: "r1", text: "Hello.", n: 1 });
    c.notify();
    await c.next(2);
    expect([c.frames[1]!.event, JSON.parse(c.frames[1]!.data).text]).toEqual(["draft", "Hello."]);
    expect(c.reads).toHaveLength(1);
    c.commit(() => {
      c.state.messages.push(3);
      c.state.lastSeq = 3;
    });
    c.setDraft({ runId: "r1", text: null, n: 2 });
    c.notify(); // one wake for both: the view (with the stored reply) is read and sent before the draft's end
    await c.next(4);
    expect(c.frames.slice(2).map((f) => f.event)).toEqual(["view", "draft"]);
    expect(JSON.parse(c.frames[2]!.data)).toMatchObject({ messages: [3] });
    c.abort.abort();
  });

  it("a draft's end heard after its message was read costs no read of its own (notifications come in commit order)", async () => {
    const c = fakeConversation();
    await c.next(1);
    c.setDraft({ runId: "r1", text: "Hello.", n: 1 });
    c.notify();
    await c.next(2);
    // The reply's step commits: its events are announced and the view (with the reply) is read and sent…
    c.commit(() => {
      c.state.messages.push(3);
      c.state.lastSeq = 3;
    });
    c.notify();
    await c.next(3);
    expect([c.frames[2]!.event, JSON.parse(c.frames[2]!.data).messages]).toEqual(["view", [3]]);
    expect(c.reads).toEqual([2, 2]);
    // …then the draft's end, published after that commit, arrives: it is sent without reading the view again.
    c.setDraft({ runId: "r1", text: null, n: 2 });
    c.notify();
    await c.next(4);
    expect([c.frames[3]!.event, JSON.parse(c.frames[3]!.data).text]).toEqual(["draft", null]);
    expect(c.reads).toEqual([2, 2]);
    // A turn that called a tool ends its draft with nothing stored: nothing to read either.
    c.setDraft({ runId: "r1", text: "Let me check.", n: 3 });
    c.notify();
    await c.next(5);
    c.setDraft({ runId: "r1", text: null, n: 4 });
    c.notify();
    await c.next(6);
    expect(c.frames.slice(4).map((f) => [f.event, JSON.parse(f.data).text])).toEqual([
      ["draft", "Let me check."],
      ["draft", null],
    ]);
    expect(c.reads).toEqual([2, 2]);
    c.abort.abort();
  });
});
