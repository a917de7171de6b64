/** A request body as the offline model receives it (after validation). */
export interface OfflineRequest {
  model: string;
  max_tokens: number;
  system?: string | Array<{ type: "text"; text: string; cache_control?: unknown }>;
  tools?: Array<{ name: string; description?: string; input_schema: Record<string, unknown>; cache_control?: unknown }>;
  messages: Array<{ role: "user" | "assistant"; content: string | RequestBlock[] }>;
  stream?: boolean;
  [other: string]: unknown;
}

/** The content blocks the offline model reads; anything else is carried along untouched. */
export type RequestBlock =
  | { type: "text"; text: string; [k: string]: unknown }
  | { type: "tool_use"; id: string; name: string; input: unknown; [k: string]: unknown }
  | {
      type: "tool_result";
      tool_use_id: string;
      content?: string | Array<{ type: string; text?: string }>;
      is_error?: boolean;
      [k: string]: unknown;
    }
  | { type: string; [k: string]: unknown };

/** A content block a script or the support model answers with; missing ids are filled in. */
export type OfflineContentBlock = { type: "text"; text: string } | { type: "tool_use"; id?: string; name: string; input: unknown };

export interface OfflineToolUse {
  name: string;
  input: Record<string, unknown>;
  id?: string;
}

/** What the model says in one response: content and a stop reason (any string, known or not). */
export interface OfflineReply {
  content: OfflineContentBlock[];
  stop_reason: string;
  stop_sequence?: string | null;
}

/** One scripted response, consumed by exactly one request. */
export type OfflineStep =
  | { reply: OfflineReply }
  | { http: 429 | 500 | 529 | 400; retryAfterSeconds?: number; message?: string }
  | { timeout: true }
  | { cutToolUse: true; name?: string; input?: Record<string, unknown> }
  | { parallel: OfflineToolUse[] }
  | { fn: (request: OfflineRequest) => OfflineStep };
