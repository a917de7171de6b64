import { storableDeep } from "@/lib/storable-text";
import Anthropic from "@anthropic-ai/sdk";
import { env } from "@/lib/env";
import { withSpan } from "@/lib/telemetry/tracing";
import { createOfflineFetch } from "./offline/fetch";
import type { ModelClient, ModelRequest, ModelResponse, SendOptions } from "./types";

export { classifyModelError, type ModelErrorClass, type ModelErrorKind } from "./errors";
export { estimateCostMicros, priceFor } from "./cost";
export type { Message, MessageParam, ModelClient, ModelRequest, ModelResponse, ModelToolDefinition, SendOptions } from "./types";

/**
 * The current Sonnet. `claude-sonnet-4-5` reached end of life on 2026-11-30 (the SDK's own list of deprecated models);
 * its successor in the SDK's model list is `claude-sonnet-5-5`. `ANTHROPIC_MODEL` overrides it.
 */
export const DEFAULT_MODEL = "claude-sonnet-5-5";
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
  const config = env();
  const apiKey = opts.apiKey ?? config.ANTHROPIC_API_KEY;
  const common = { maxRetries: opts.maxRetries ?? 2, timeout: opts.timeoutMs ?? 60_000 };
  if (apiKey) {
    const client = new Anthropic({
      apiKey,
      ...((opts.baseURL ?? config.ANTHROPIC_BASE_URL) ? { baseURL: opts.baseURL ?? config.ANTHROPIC_BASE_URL } : {}),
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
      ...common,
    });
    return clientFor(client, "claude", opts.model ?? config.ANTHROPIC_MODEL);
  }
  const client = new Anthropic({
    apiKey: "offline",
    baseURL: opts.baseURL ?? OFFLINE_BASE_URL,
    fetch: opts.fetch ?? createOfflineFetch(),
    ...common,
  });
  return clientFor(client, "offline", opts.model ?? OFFLINE_MODEL);
}

function clientFor(client: Anthropic, mode: ModelClient["mode"], model: string): ModelClient {
  return {
    mode,
    model,
    send: (req, opts) => send(client, mode, model, req, opts),
    countTokens: async (req) => {
      const { max_tokens: _unused, ...params } = buildParams(model, req);
      return (await client.messages.countTokens(params)).input_tokens;
    },
  };
}

/**
 * Prompt-cache breakpoints (at most four): the system prompt and the last tool definition (the stable prefix), the
 * end of the conversation's rolling summary when there is one (stable until the next compaction), and a moving one on
 * the last block of the conversation — so each request reads everything the previous one sent from the cache and
 * writes only what is new. Blocks are copied, never marked in place: they may be the transcript's cached rows.
 */
export function buildParams(model: string, req: ModelRequest): Anthropic.MessageCreateParamsNonStreaming {
  const ephemeral = { type: "ephemeral" as const };
  const tools = req.tools.map((t, i) => (i === req.tools.length - 1 ? { ...t, cache_control: ephemeral } : t));
  const marks = new Set<string>();
  const lastIndex = req.messages.length - 1;
  const last = req.messages[lastIndex];
  if (last && Array.isArray(last.content) && last.content.length) marks.add(`${lastIndex}:${last.content.length - 1}`);
  const first = req.messages[0];
  if (req.summaryBlocks && first && Array.isArray(first.content) && first.content.length >= req.summaryBlocks)
    marks.add(`0:${req.summaryBlocks - 1}`);
  const messages = marks.size
    ? req.messages.map((m, i) =>
        Array.isArray(m.content)
          ? ({ ...m, content: m.content.map((b, j) => (marks.has(`${i}:${j}`) ? cacheable(b, ephemeral) : b)) } as Anthropic.MessageParam)
          : m,
      )
    : req.messages;
  return {
    model,
    max_tokens: req.maxTokens,
    system: [{ type: "text", text: req.system, cache_control: ephemeral }],
    ...(tools.length ? { tools: tools as Anthropic.Tool[] } : {}),
    messages,
  };
}

// Thinking blocks cannot carry a breakpoint; the product never sends them, but a copy is left as it is then.
function cacheable(block: Anthropic.ContentBlockParam, mark: { type: "ephemeral" }): Anthropic.ContentBlockParam {
  if (block.type === "thinking" || block.type === "redacted_thinking") return block;
  return { ...block, cache_control: mark } as Anthropic.ContentBlockParam;
}

/**
 * One model request. Streaming reports text deltas as they arrive and returns the final message; a
 * tool_use input is only ever what the completed message carries. Errors are the SDK's own classes,
 * thrown after the SDK's retries; `classifyModelError` says what they mean.
 */
/** One model call, as a `model.call` span with the GenAI semantic conventions' attributes (never the content). */
function send(
  client: Anthropic,
  mode: ModelClient["mode"],
  model: string,
  req: ModelRequest,
  opts: SendOptions = {},
): Promise<ModelResponse> {
  const attributes = {
    "gen_ai.system": "anthropic",
    "gen_ai.request.model": model,
    "model.mode": mode,
    "model.stream": Boolean(opts.stream),
  };
  return withSpan("model.call", attributes, async (span) => {
    const response = await sendInSpan(client, model, req, opts);
    const { message } = response;
    span.setAttributes({
      "gen_ai.response.model": message.model,
      "gen_ai.response.finish_reasons": [message.stop_reason ?? "none"],
      "gen_ai.usage.input_tokens": message.usage.input_tokens,
      "gen_ai.usage.output_tokens": message.usage.output_tokens,
    });
    return response;
  });
}

async function sendInSpan(client: Anthropic, model: string, req: ModelRequest, opts: SendOptions): Promise<ModelResponse> {
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
  // What the model wrote is stored as it is, except what PostgreSQL cannot hold (a NUL, a lone surrogate): U+FFFD.
  return { message: { ...message, content: storableDeep(message.content) }, latencyMs: Math.round(performance.now() - started) };
}
