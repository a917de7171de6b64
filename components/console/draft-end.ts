import type { QueryClient } from "@tanstack/react-query";

/**
 * When a reply's draft ends, resolves once the page's query holds the stored reply (the caller then lets the draft
 * go, so nothing flickers). The feed answers a draft's end with or after the events of the step that stored it, and
 * those events have already started a read of the page: that read is awaited (`cancelRefetch: false`), not cancelled
 * and sent again — without it, every streamed reply cost a watched conversation two reads.
 */
export function storedReplyRead(client: QueryClient, queryKey: readonly unknown[]): Promise<void> {
  return client.invalidateQueries({ queryKey }, { cancelRefetch: false });
}
