import Anthropic from "@anthropic-ai/sdk";
import { createOfflineFetch } from "./offline/fetch";
import type { ModelClient, ModelRequest, ModelResponse, SendOptions } from "./types";

export { classifyModelError, type ModelErrorClass, type ModelErrorKind } from "./errors";
export { estimateCostMicros, priceFor } from "./cost";
export type { Message, MessageParam, ModelClient, ModelRequest, ModelResponse, ModelToolDefinition, SendOptions } from "./types";

export const DEFAULT_MODEL = "claude-sonnet-4-5";
export const OFFLINE_MODEL = "offline-support-model";
const OFFLINE_BASE_URL = "http://offline.model";

export interface ModelClientOptions {
  fetch?: typeof fetch;
  apiKey?: string;
  baseURL?: string;
  model?: string;
  maxRetries?: number;
  timeoutMs?: number;
}

/**
 * The one way the runtime calls the model. Real Claude when an API key is given or ANTHROPIC_API_KEY is
 * set (model from ANTHROPIC_MODEL, base URL from ANTHROPIC_BASE_URL); otherwise the offline support model
 * plugged into the same SDK client through its `fetch` option, so request building, streaming, retries
 * and error classes are the SDK's in both modes. `opts.fetch` replaces the transport in either mode.
 */
export function createModelClient(opts: ModelClientOptions = {}): ModelClient {
  const env = process.env;
  const apiKey = opts.apiKey ?? (env.ANTHROPIC_API_KEY || undefined);
  const common = { maxRetries: opts.maxRetries ?? 2, timeout: opts.timeoutMs ?? 60_000 };
  if (apiKey) {
    const client = new Anthropic({
      apiKey,
      ...(opts.baseURL ?? env.ANTHROPIC_BASE_URL ? { baseURL: opts.baseURL ?? env.ANTHROPIC_BASE_URL } : {}),
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
      ...common,
    });
    return clientFor(client, "claude", opts.model ?? (env.ANTHROPIC_MODEL || DEFAULT_MODEL));
  }
  const client = new Anthropic({ apiKey: "offline", baseURL: opts.baseURL ?? OFFLINE_BASE_URL, fetch: opts.fetch ?? createOfflineFetch(), ...common });
  return clientFor(client, "offline", opts.model ?? OFFLINE_MODEL);
}

function clientFor(client: Anthropic, mode: ModelClient["mode"], model: string): ModelClient {
  return {
    mode,
    model,
    send: (req, opts) => send(client, model, req, opts),
  };
}

/**
 * The stable prefix is marked for prompt caching: the system prompt as one text block and the last
 * tool definition each carry `cache_control`, so everything up to the conversation is cached.
 */
export function buildParams(model: string, req: ModelRequest): Anthropic.MessageCreateParamsNonStreaming {
  const tools = req.tools.map((t, i) => (i === req.tools.length - 1 ? { ...t, cache_control: { type: "ephemeral" as const } } : t));
  return {
    model,
    max_tokens: req.maxTokens,
    system: [{ type: "text", text: req.system, cache_control: { type: "ephemeral" } }],
    ...(tools.length ? { tools: tools as Anthropic.Tool[] } : {}),
    messages: req.messages,
  };
}

/**
 * One model request. Streaming reports text deltas as they arrive and returns the final message; a
 * tool_use input is only ever what the completed message carries. Errors are the SDK's own classes,
 * thrown after the SDK's retries; `classifyModelError` says what they mean.
 */
async function send(client: Anthropic, model: string, req: ModelRequest, opts: SendOptions = {}): Promise<ModelResponse> {
  const params = buildParams(model, req);
  const started = performance.now();
  let message: Anthropic.Message;
  if (opts.stream) {
    const stream = client.messages.stream(params, { signal: opts.signal });
    const onTextDelta = opts.onTextDelta;
    if (onTextDelta) {
      stream.on("text", (delta) => {
        // A failing listener (a closed widget connection) must not fail the model call.
        try {
          onTextDelta(delta);
        } catch {
          /* ignored on purpose */
        }
      });
    }
    message = await stream.finalMessage();
  } else {
    message = await client.messages.create(params, { signal: opts.signal });
  }
  return { message, latencyMs: Math.round(performance.now() - started) };
}
