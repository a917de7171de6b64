import type Anthropic from "@anthropic-ai/sdk";

export type MessageParam = Anthropic.MessageParam;
export type Message = Anthropic.Message;
export type Usage = Anthropic.Usage;

/** A tool definition as the model sees it (what `toolDefinitionsForModel()` returns). */
export interface ModelToolDefinition {
  name: string;
  description: string;
  input_schema: { type: "object"; [key: string]: unknown };
}

/** One model request of the runtime: the stable prefix (system + tools) and the conversation so far. */
export interface ModelRequest {
  system: string;
  tools: ModelToolDefinition[];
  messages: MessageParam[];
  maxTokens: number;
  /**
   * How many leading blocks of the first message are the conversation's rolling summary (lib/runtime/context): a
   * prompt-cache breakpoint goes after them, since they stay the same until the next compaction.
   */
  summaryBlocks?: number;
}

export interface SendOptions {
  /** Stream the response; text deltas go to `onTextDelta`, tool input is only read from the final message. */
  stream?: boolean;
  onTextDelta?: (text: string) => void;
  signal?: AbortSignal;
}

/** The SDK message exactly as returned, and how long the call took (including the SDK's own retries). */
export interface ModelResponse {
  message: Message;
  latencyMs: number;
}

export interface ModelClient {
  mode: "claude" | "offline";
  model: string;
  send(req: ModelRequest, opts?: SendOptions): Promise<ModelResponse>;
  /** The request's input size in tokens, as the provider counts it (Claude's count_tokens; the offline model's own). */
  countTokens(req: ModelRequest): Promise<number>;
}
