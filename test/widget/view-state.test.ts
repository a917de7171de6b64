import { describe, expect, it } from "vitest";
import { mergeView } from "@/components/widget/view-state";
import type { WidgetMessage, WidgetView } from "@/lib/widget/api-types";

// How the widget merges the views it gets from three sources (a fetch, the live stream, a request's answer), which can
// arrive out of order: a fetch that was in flight when the stream brought a newer view must not take the status back.
const message = (seq: number, from: WidgetMessage["from"], text: string): WidgetMessage => ({
  seq,
  from,
  name: from === "person" ? "Raj" : null,
  text,
  at: "2026-12-02T05:00:00.000Z",
});
const view = (version: string, change: Partial<WidgetView>): WidgetView => ({
  conversationId: "c1",
  version,
  status: "waiting_for_person",
  owner: null,
  verified: false,
  pendingApprovals: 0,
  lastSeq: 2,
  messages: [],
  ...change,
});

describe("mergeView", () => {
  const waiting = view("40", { lastSeq: 2, messages: [message(1, "system", "Hello"), message(2, "customer", "A person, please")] });
  const takenOver = view("44", {
    status: "with_person",
    owner: "Raj",
    lastSeq: 4,
    messages: [message(3, "system", "Raj joined"), message(4, "person", "Hi, I'm Raj")],
  });

  it("a newer view brings its status and its messages", () => {
    const merged = mergeView(waiting, takenOver);
    expect(merged).toMatchObject({ version: "44", status: "with_person", owner: "Raj", lastSeq: 4 });
    expect(merged.messages.map((m) => m.seq)).toEqual([1, 2, 3, 4]);
  });

  it("an older view arriving later adds what it has but does not take the status or the last seq back", () => {
    const shown = mergeView(waiting, takenOver);
    // A fetch read at version 40 (before the takeover), answered after the stream's view of version 44.
    const late = view("40", { lastSeq: 2, messages: [message(2, "customer", "A person, please")] });
    const merged = mergeView(shown, late);
    expect(merged).toMatchObject({ version: "44", status: "with_person", owner: "Raj", lastSeq: 4 });
    expect(merged.messages.map((m) => m.seq)).toEqual([1, 2, 3, 4]);
  });

  it("views of the same version: the one that arrived last wins (nothing was written in between)", () => {
    const again = view("44", { status: "with_person", owner: "Raj", lastSeq: 4, verified: true });
    expect(mergeView(takenOver, again)).toMatchObject({ verified: true, lastSeq: 4 });
    expect(mergeView(takenOver, again).messages).toHaveLength(2);
  });

  it("another conversation's view replaces the view (a new chat)", () => {
    const other = view("3", { conversationId: "c2", lastSeq: 1, messages: [message(1, "system", "Hello")] });
    expect(mergeView(takenOver, other)).toEqual(other);
  });
});
