/** TanStack Query keys of the console; the event feed invalidates by these. */
export const consoleKeys = {
  all: ["console"] as const,
  queue: (filter: string) => ["console", "queue", filter] as const,
  queueAll: ["console", "queue"] as const,
  handoff: (id: string) => ["console", "handoff", id] as const,
  handoffAll: ["console", "handoff"] as const,
  conversation: (id: string) => ["console", "conversation", id] as const,
};
