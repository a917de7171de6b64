import { readFramed } from "@/lib/agent/framing";
import type { OfflineRequest, RequestBlock } from "./types";

/**
 * The conversation as the offline model reads it: one flat, ordered list of events. Consecutive
 * same-role messages are merged first (as the API does), so `turn` counts merged turns.
 */
export type TranscriptEvent =
  | { kind: "customer"; text: string; turn: number }
  | { kind: "context"; text: string; turn: number }
  | { kind: "harness"; text: string; turn: number }
  | { kind: "assistant_text"; text: string; turn: number }
  | { kind: "tool_use"; id: string; name: string; input: Record<string, unknown>; turn: number }
  | { kind: "tool_result"; toolUseId: string; isError: boolean; body: Record<string, unknown>; turn: number }
  /** Closes an assistant turn; a turn without tool_use is a reply the customer saw (or was meant to). */
  | { kind: "assistant_end"; hasToolUse: boolean; turn: number };

export interface Transcript {
  events: TranscriptEvent[];
  /** The request ends with the assistant's own message (a paused turn to continue). */
  endsWithAssistant: boolean;
}

const asBlocks = (content: string | RequestBlock[]): RequestBlock[] =>
  typeof content === "string" ? [{ type: "text", text: content }] : content;

/** Tool results are JSON written by the runtime; anything else is kept as `{ text }` so nothing is lost. */
export function parseToolResultBody(content: unknown): Record<string, unknown> {
  const text =
    typeof content === "string"
      ? content
      : Array.isArray(content)
        ? content
            .filter(
              (b): b is { type: "text"; text: string } => typeof b === "object" && b !== null && (b as { type?: unknown }).type === "text",
            )
            .map((b) => b.text)
            .join("\n")
        : "";
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    return { value: parsed };
  } catch {
    return { text };
  }
}

/**
 * Reads the request's messages into events. User text is framed (lib/agent/framing): <customer_message> is the
 * customer's, <support_note> the support system's, <shop_context> the shop's — as Claude is told to read it.
 * (Unframed text, from before the framing, is read by its old `[context]` / `[harness]` prefixes.)
 */
export function readTranscript(request: OfflineRequest): Transcript {
  const events: TranscriptEvent[] = [];
  let turn = -1;
  let role: string | undefined;
  let assistantHasToolUse = false;
  const closeAssistant = () => {
    if (role === "assistant") events.push({ kind: "assistant_end", hasToolUse: assistantHasToolUse, turn });
  };
  for (const message of request.messages) {
    if (message.role !== role) {
      closeAssistant();
      role = message.role;
      turn++;
      assistantHasToolUse = false;
    }
    for (const block of asBlocks(message.content)) {
      if (block.type === "text" && typeof block.text === "string") {
        const text = block.text.trim();
        const framed = readFramed(text);
        if (message.role === "assistant") events.push({ kind: "assistant_text", text, turn });
        else if (framed.kind === "context") events.push({ kind: "context", text: framed.text, turn });
        else if (framed.kind === "note") events.push({ kind: "harness", text: framed.text, turn });
        else if (framed.kind === "customer") {
          if (framed.text) events.push({ kind: "customer", text: framed.text, turn });
        } else if (/^\[context\]/i.test(text)) events.push({ kind: "context", text, turn });
        else if (/^\[harness\]/i.test(text)) events.push({ kind: "harness", text, turn });
        else if (text) events.push({ kind: "customer", text, turn });
      } else if (block.type === "tool_use" && message.role === "assistant") {
        const b = block as { id: string; name: string; input: unknown };
        assistantHasToolUse = true;
        const input = typeof b.input === "object" && b.input !== null ? (b.input as Record<string, unknown>) : {};
        events.push({ kind: "tool_use", id: b.id, name: b.name, input, turn });
      } else if (block.type === "tool_result") {
        const b = block as { tool_use_id: string; content?: unknown; is_error?: boolean };
        events.push({
          kind: "tool_result",
          toolUseId: b.tool_use_id,
          isError: b.is_error === true,
          body: parseToolResultBody(b.content),
          turn,
        });
      }
    }
  }
  closeAssistant();
  return { events, endsWithAssistant: role === "assistant" };
}
