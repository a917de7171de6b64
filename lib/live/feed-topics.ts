// The console's views that follow only part of the shop's event feed. The queue changes only with a handoff's events
// (created, claimed, updated, decided) and a take-over or hand-back of a conversation, so an open queue is woken and
// answered only for those — a customer's message, a run's step, a reply wakes no reviewer's queue. The database's
// notification marks the same events (`q` in support_notify_events, prisma/migrations/20261204180000_queue_notifications):
// test/console-feed-topics.test.ts checks the two agree.

/** A live view that follows only what it shows: `queue`, the handoff queue. */
export type FeedTopic = "queue";
export const FEED_TOPICS = ["queue"] as const satisfies readonly FeedTopic[];

/** Whether an event of this type can change the queue. */
export function touchesQueue(type: string): boolean {
  return type.startsWith("handoff.") || type === "conversation.updated";
}

export const topicFilter: Record<FeedTopic, (type: string) => boolean> = { queue: touchesQueue };
