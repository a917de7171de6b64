import type Anthropic from "@anthropic-ai/sdk";

/**
 * The Messages API wire format, as the SDK parses it: a JSON message, the SSE event sequence of a
 * streamed message, and error bodies. Nothing here decides what to answer.
 */

export type WireMessage = Anthropic.Message;

export type ApiErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "not_found_error"
  | "rate_limit_error"
  | "api_error"
  | "overloaded_error";

/** The non-usage fields of a message; usage is computed by the caller. */
export function buildMessage(fields: {
  id: string;
  model: string;
  content: WireMessage["content"];
  stopReason: string;
  stopSequence: string | null;
  usage: WireMessage["usage"];
}): WireMessage {
  return {
    id: fields.id,
    type: "message",
    role: "assistant",
    model: fields.model,
    content: fields.content,
    // Any string goes through on purpose: tests send stop reasons the SDK's types do not know yet.
    stop_reason: fields.stopReason as WireMessage["stop_reason"],
    stop_sequence: fields.stopSequence,
    stop_details:
      fields.stopReason === "refusal" ? ({ type: "refusal", category: null, explanation: null } as WireMessage["stop_details"]) : null,
    container: null,
    diagnostics: null,
    usage: fields.usage,
  } as WireMessage;
}

export function jsonResponse(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

/** An Anthropic error response: `{type: "error", error: {type, message}, request_id}`. */
export function errorResponse(status: number, type: ApiErrorType, message: string, headers: Record<string, string> = {}): Response {
  const requestId = headers["request-id"] ?? null;
  return jsonResponse({ type: "error", error: { type, message }, request_id: requestId }, status, headers);
}

/** Splits text into a few word-aligned deltas, as a real stream does, so callers see several of them. */
export function textDeltas(text: string): string[] {
  const words = text.match(/\S+\s*|\s+/g) ?? [];
  const out: string[] = [];
  for (let i = 0; i < words.length; i += 3) out.push(words.slice(i, i + 3).join(""));
  return out.length ? out : [text];
}

/** Splits serialised tool input into several fragments cut at arbitrary points (mid-key, mid-value). */
export function jsonFragments(json: string): string[] {
  if (json.length <= 2) return [json];
  const parts = Math.min(4, json.length);
  const size = Math.ceil(json.length / parts);
  const out: string[] = [];
  for (let i = 0; i < json.length; i += size) out.push(json.slice(i, i + size));
  return out;
}

function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The SSE frames of a message: message_start (empty content, no stop reason) → per block
 * content_block_start / delta* / stop → message_delta (stop reason + usage) → message_stop.
 * `truncatedLastToolJson` replaces the last tool_use block's input with JSON that stops mid-object,
 * which is what a `max_tokens` stop inside a tool call looks like on the wire.
 */
export function sseFrames(message: WireMessage, opts: { truncatedLastToolJson?: string } = {}): string[] {
  const frames: string[] = [];
  const { content, stop_reason, stop_sequence, stop_details, usage, ...rest } = message;
  frames.push(
    frame("message_start", {
      type: "message_start",
      message: { ...rest, content: [], stop_reason: null, stop_sequence: null, stop_details: null, usage: { ...usage, output_tokens: 1 } },
    }),
  );
  const lastToolIndex = content.map((b) => b.type).lastIndexOf("tool_use");
  content.forEach((block, index) => {
    if (block.type === "text") {
      frames.push(frame("content_block_start", { type: "content_block_start", index, content_block: { ...block, text: "" } }));
      for (const text of textDeltas(block.text)) {
        frames.push(frame("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text } }));
      }
    } else if (block.type === "tool_use") {
      frames.push(frame("content_block_start", { type: "content_block_start", index, content_block: { ...block, input: {} } }));
      const json =
        index === lastToolIndex && opts.truncatedLastToolJson !== undefined ? opts.truncatedLastToolJson : JSON.stringify(block.input);
      for (const partial_json of jsonFragments(json)) {
        frames.push(
          frame("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } }),
        );
      }
    } else {
      frames.push(frame("content_block_start", { type: "content_block_start", index, content_block: block }));
    }
    frames.push(frame("content_block_stop", { type: "content_block_stop", index }));
  });
  frames.push(frame("ping", { type: "ping" }));
  frames.push(
    frame("message_delta", {
      type: "message_delta",
      delta: { stop_reason, stop_sequence, stop_details, container: null },
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: usage.output_tokens,
        server_tool_use: null,
      },
    }),
  );
  frames.push(frame("message_stop", { type: "message_stop" }));
  return frames;
}

/** A streamed response; each frame is its own chunk so the SDK's SSE decoder reassembles across reads. */
export function sseResponse(frames: string[], headers: Record<string, string> = {}, paceMs = 0): Response {
  const encoder = new TextEncoder();
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (next >= frames.length) return controller.close();
      const f = frames[next++]!;
      // Paced like a model writing: a pause before each piece of text (none when paceMs is 0).
      if (paceMs > 0 && f.includes('"text_delta"')) await new Promise((r) => setTimeout(r, paceMs));
      controller.enqueue(encoder.encode(f));
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream", "cache-control": "no-cache", ...headers } });
}
