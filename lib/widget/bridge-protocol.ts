/**
 * The postMessage protocol between `public/embed.js` (on the shop's page) and the widget iframe.
 * embed.js is plain JavaScript without a build step and mirrors these names; keep them in step.
 *
 * Both sides check origins: the embed accepts only messages whose origin is the widget's and whose source
 * is its own iframe; the iframe accepts only messages from the parent origin it was given at load (and that
 * the shop allows), from its parent window, and posts only to that exact origin — never "*".
 */
export const BRIDGE_SOURCE = "support-widget";

/** parent → iframe */
export type ParentMessage =
  | { source: typeof BRIDGE_SOURCE; type: "init"; identity: string | null; open: boolean; focus: boolean }
  | { source: typeof BRIDGE_SOURCE; type: "identify"; identity: string | null }
  | { source: typeof BRIDGE_SOURCE; type: "visibility"; open: boolean; focus: boolean };

/** iframe → parent */
export type WidgetMessageToParent =
  | { source: typeof BRIDGE_SOURCE; type: "ready" }
  | { source: typeof BRIDGE_SOURCE; type: "close" }
  | { source: typeof BRIDGE_SOURCE; type: "unread"; count: number };

/** Validates the shape of a message from the parent (its origin and source are checked by the caller). */
export function parseParentMessage(data: unknown): ParentMessage | null {
  if (!data || typeof data !== "object") return null;
  const m = data as Record<string, unknown>;
  if (m.source !== BRIDGE_SOURCE) return null;
  const identity =
    m.identity === null || m.identity === undefined
      ? null
      : typeof m.identity === "string" && m.identity.length <= 4096
        ? m.identity
        : undefined;
  switch (m.type) {
    case "init":
      return identity === undefined
        ? null
        : { source: BRIDGE_SOURCE, type: "init", identity, open: m.open === true, focus: m.focus === true };
    case "identify":
      return identity === undefined ? null : { source: BRIDGE_SOURCE, type: "identify", identity };
    case "visibility":
      return { source: BRIDGE_SOURCE, type: "visibility", open: m.open === true, focus: m.focus === true };
    default:
      return null;
  }
}
