import { QueryClient, QueryObserver } from "@tanstack/react-query";
import { describe, expect, it } from "vitest";
import { invalidateForEvents } from "@/components/console/use-live-events";
import { storedReplyRead } from "@/components/console/draft-end";
import { consoleKeys } from "@/components/console/query-keys";
import type { ConsoleEvent } from "@/lib/console/queries";

// The console's live feed refetches what its events touch, each page once. A second invalidation of a query in the
// same tick cancels the request the first one sent and sends another: a handoff page touched by its own handoff's
// event and by its conversation's events cost two reads per claim and per decision, and a watched conversation two
// reads per streamed reply (the step's events, then the draft's end).

const HANDOFF = "h-1";
const CONVERSATION = "c-1";

function watch(client: QueryClient, queryKey: readonly unknown[], data: unknown) {
  const calls: number[] = [];
  const observer = new QueryObserver(client, {
    queryKey,
    queryFn: async () => {
      calls.push(Date.now());
      return data;
    },
    initialData: data,
    staleTime: 10_000,
  });
  const unsubscribe = observer.subscribe(() => undefined); // on screen: an invalidation refetches it
  return { calls, unsubscribe };
}

const event = (type: string, data: unknown): ConsoleEvent =>
  ({ id: "1", type, conversationId: CONVERSATION, data, createdAt: new Date().toISOString() }) as unknown as ConsoleEvent;

describe("invalidateForEvents", () => {
  it("reads a handoff page once for a batch that names its handoff and its conversation", async () => {
    const client = new QueryClient();
    const page = watch(client, consoleKeys.handoff(HANDOFF), { handoff: { id: HANDOFF, conversationId: CONVERSATION } });
    const other = watch(client, consoleKeys.handoff("h-2"), { handoff: { id: "h-2", conversationId: "c-2" } });
    const conversation = watch(client, consoleKeys.conversation(CONVERSATION), { id: CONVERSATION });

    invalidateForEvents(client, [event("handoff.decided", { handoffId: HANDOFF }), event("message.created", { seq: 4 })]);
    await new Promise((r) => setTimeout(r, 20));

    expect(page.calls).toHaveLength(1);
    expect(conversation.calls).toHaveLength(1);
    expect(other.calls, "a page of another conversation is left alone").toHaveLength(0);
    for (const w of [page, other, conversation]) w.unsubscribe();
  });

  it("still reads a handoff page for its conversation's events alone, and for its handoff's alone", async () => {
    const client = new QueryClient();
    const page = watch(client, consoleKeys.handoff(HANDOFF), { handoff: { id: HANDOFF, conversationId: CONVERSATION } });
    invalidateForEvents(client, [event("run.completed", {})]);
    await new Promise((r) => setTimeout(r, 20));
    expect(page.calls).toHaveLength(1);
    invalidateForEvents(client, [{ ...event("handoff.claimed", { handoffId: HANDOFF }), conversationId: null } as ConsoleEvent]);
    await new Promise((r) => setTimeout(r, 20));
    expect(page.calls).toHaveLength(2);
    page.unsubscribe();
  });
});

describe("storedReplyRead (a watched conversation's draft ended)", () => {
  it("awaits the read the step's events started instead of cancelling it and reading again", async () => {
    const client = new QueryClient();
    const page = watch(client, consoleKeys.conversation(CONVERSATION), { replies: 0 });
    // The feed's page: the step's events (the stored reply is committed) — their invalidation starts a read …
    void client.invalidateQueries({ queryKey: consoleKeys.conversation(CONVERSATION) });
    // … and the draft's end in the same page.
    await storedReplyRead(client, consoleKeys.conversation(CONVERSATION));
    expect(page.calls).toHaveLength(1);
    page.unsubscribe();
  });

  it("reads the page when no read is on its way", async () => {
    const client = new QueryClient();
    const page = watch(client, consoleKeys.conversation(CONVERSATION), { replies: 0 });
    await storedReplyRead(client, consoleKeys.conversation(CONVERSATION));
    expect(page.calls).toHaveLength(1);
    page.unsubscribe();
  });
});
