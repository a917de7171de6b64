/**
 * The widget API's wire shapes, shared by the route handlers and the iframe's client code (no server
 * imports here). Dates travel as ISO strings; event cursors as decimal strings (they are bigints).
 */

export type WidgetStatus = "idle" | "working" | "waiting_for_approval" | "waiting_for_person" | "with_person";
export type WidgetAuthor = "customer" | "agent" | "person" | "system";

export interface WidgetMessage {
  seq: number;
  from: WidgetAuthor;
  /** A person's name, for their replies; null otherwise. */
  name: string | null;
  text: string;
  at: string;
}

export interface WidgetView {
  conversationId: string;
  /**
   * The newest event id of the snapshot the view was read in (decimal): of two views, the one with the lower version
   * is older — a fetch that was in flight when a newer view arrived must not take its status back.
   */
  version: string;
  status: WidgetStatus;
  owner: string | null;
  verified: boolean;
  pendingApprovals: number;
  lastSeq: number;
  messages: WidgetMessage[];
}

export interface WidgetSession {
  /** The visitor's conversation token: their only credential. Sent back as `Authorization: Bearer`. */
  token: string;
  resumed: boolean;
  /** The shop-verified customer, when the shop signed one in. */
  customer: { name: string } | null;
  /** The newest event id when the view was read: follow live updates from here. */
  cursor: string;
  view: WidgetView;
}

export interface WidgetViewResponse {
  view: WidgetView;
}

export interface WidgetSendResponse {
  /** started: the agent is answering; queued: it will answer after what is pending; to_person: a person owns the chat. */
  kind: "started" | "queued" | "to_person";
  view: WidgetView;
}

export interface WidgetHumanResponse {
  status: "waiting_for_person" | "with_person";
  view: WidgetView;
}

export interface WidgetErrorBody {
  code: string;
  message: string;
}

/** Header names the widget API reads. */
export const WIDGET_TOKEN_HEADER = "authorization";
export const LAST_EVENT_ID_HEADER = "last-event-id";
