import { OfflineScript, scriptFromEnv } from "./script";
import { validateRequest } from "./validate";
import { supportModelReply } from "./support-model";
import { PromptCache, requestTokens } from "./usage";
import { stableId } from "./ids";
import { env } from "@/lib/env";
import { buildMessage, errorResponse, jsonResponse, sseFrames, sseResponse, type ApiErrorType, type WireMessage } from "./wire";
import type { OfflineContentBlock, OfflineReply, OfflineRequest, OfflineStep } from "./types";

const HTTP_ERRORS: Record<number, { type: ApiErrorType; message: string }> = {
  400: { type: "invalid_request_error", message: "Invalid request (scripted)." },
  429: { type: "rate_limit_error", message: "Number of request tokens has exceeded your per-minute rate limit (scripted)." },
  500: { type: "api_error", message: "Internal server error (scripted)." },
  529: { type: "overloaded_error", message: "Overloaded (scripted)." },
};

function abortError(signal: AbortSignal | null | undefined): Error {
  const reason = signal?.reason;
  if (reason instanceof Error && reason.name === "AbortError") return reason;
  return new DOMException("The operation was aborted.", "AbortError");
}

/**
 * A `fetch` that is the Messages API, offline: POST `…/v1/messages` is validated like the real API
 * (400 `invalid_request_error` on a broken transcript), then answered by the next scripted step if one
 * is pending, else by the deterministic support model — as JSON, or as SSE when the body says
 * `stream: true`. Plug it into `new Anthropic({ fetch })` so the SDK does everything else. Each
 * instance has its own prompt cache. Without `opts.script`, SUPPORT_OFFLINE_SCRIPT may name a script file.
 */
export function createOfflineFetch(opts: { script?: OfflineScript; streamPaceMs?: number } = {}): typeof fetch {
  const script = opts.script ?? scriptFromEnv() ?? new OfflineScript();
  const paceMs = opts.streamPaceMs ?? env().SUPPORT_OFFLINE_STREAM_PACE_MS;
  const cache = new PromptCache();

  const offlineFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    // The request leaves the process here, as it would over the network: I/O started alongside it (a read the
    // runtime does while the model answers) goes out before the offline model computes its answer.
    await new Promise((resolve) => setImmediate(resolve));
    const request = input instanceof Request ? input : undefined;
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const method = (init?.method ?? request?.method ?? "GET").toUpperCase();
    const signal = init?.signal ?? request?.signal;
    if (signal?.aborted) throw abortError(signal);
    const requestId = stableId("req_", url.pathname, Date.now(), Math.random());
    const headers = { "request-id": requestId };
    const counting = url.pathname.endsWith("/v1/messages/count_tokens");
    if (method !== "POST" || !(url.pathname.endsWith("/v1/messages") || counting)) {
      return errorResponse(404, "not_found_error", `${method} ${url.pathname} is not served by the offline model.`, headers);
    }
    const raw =
      typeof init?.body === "string" ? init.body : request ? await request.text() : init?.body ? await new Response(init.body).text() : "";
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return errorResponse(400, "invalid_request_error", "The request body is not valid JSON.", headers);
    }
    if (counting) {
      // The exact count of this model: the same tokens a request's usage reports (input + cache reads + writes).
      const b = body as OfflineRequest;
      if (!b || typeof b !== "object" || !Array.isArray(b.messages))
        return errorResponse(400, "invalid_request_error", "messages: Field required", headers);
      return new Response(JSON.stringify({ input_tokens: requestTokens(b) }), {
        status: 200,
        headers: { "content-type": "application/json", ...headers },
      });
    }
    script.record(body as OfflineRequest);
    const validation = validateRequest(body);
    if (!validation.ok) return errorResponse(400, "invalid_request_error", validation.message, headers);
    const req = validation.request;

    const step = resolveStep(script.take(), req);
    if (step && "timeout" in step) {
      // Never answers: the SDK's timeout (or the caller's abort) ends the wait, as with a hung connection.
      return new Promise<Response>((_, reject) => {
        if (!signal) return;
        signal.addEventListener("abort", () => reject(abortError(signal)), { once: true });
      });
    }
    if (step && "http" in step) {
      const e = HTTP_ERRORS[step.http] ?? HTTP_ERRORS[500]!;
      const extra: Record<string, string> = step.retryAfterSeconds !== undefined ? { "retry-after": String(step.retryAfterSeconds) } : {};
      return errorResponse(step.http, e.type, step.message ?? e.message, { ...headers, ...extra });
    }

    let reply: OfflineReply;
    let truncatedLastToolJson: string | undefined;
    if (step && "cutToolUse" in step) {
      ({ reply, truncatedLastToolJson } = cutToolUse(req, step));
    } else if (step && "parallel" in step) {
      reply = {
        content: step.parallel.map((t) => ({ type: "tool_use", id: t.id, name: t.name, input: t.input })),
        stop_reason: "tool_use",
      };
    } else if (step && "reply" in step) {
      reply = step.reply;
    } else {
      reply = supportModelReply(req);
    }

    const content = toWireContent(reply.content, req);
    // JSON mode can only say "cut" by an incomplete input; the stream shows the JSON stopping mid-object.
    if (truncatedLastToolJson !== undefined && !req.stream) {
      const last = content.findLastIndex((b) => b.type === "tool_use");
      content[last] = { ...(content[last] as WireMessage["content"][number] & { type: "tool_use" }), input: {} };
    }
    const message = buildMessage({
      id: stableId("msg_", req.messages, reply.stop_reason),
      model: req.model,
      content,
      stopReason: reply.stop_reason,
      stopSequence: reply.stop_sequence ?? (reply.stop_reason === "stop_sequence" ? "\n\nHuman:" : null),
      usage: cache.usage(req, content),
    });
    if (req.stream) return sseResponse(sseFrames(message, { truncatedLastToolJson }), headers, paceMs);
    return jsonResponse(message, 200, headers);
  };
  return offlineFetch as typeof fetch;
}

/** Computed steps (`fn`) are asked for the step they stand for; a few levels at most. */
function resolveStep(step: OfflineStep | undefined, req: OfflineRequest): Exclude<OfflineStep, { fn: unknown }> | undefined {
  let current = step;
  for (let depth = 0; current && "fn" in current; depth++) {
    if (depth > 5) throw new Error("offline script: fn steps nested too deeply");
    current = current.fn(req);
  }
  return current as Exclude<OfflineStep, { fn: unknown }> | undefined;
}

/**
 * A `max_tokens` response whose last block is a tool_use cut mid-JSON: the support model's own next
 * call when it has one (or the step's name/input), truncated to about half its serialised input.
 */
function cutToolUse(req: OfflineRequest, step: { name?: string; input?: Record<string, unknown> }) {
  const planned = supportModelReply(req).content;
  const lastTool = planned.findLastIndex((b) => b.type === "tool_use");
  const fallback = {
    name: "escalate_to_human",
    input: { trigger: "no_progress", summary: "The customer needs help with an order that could not be completed automatically." },
  };
  const tool: { name: string; input: unknown } =
    step.name || step.input
      ? { name: step.name ?? fallback.name, input: step.input ?? fallback.input }
      : lastTool >= 0
        ? (planned[lastTool] as { name: string; input: unknown })
        : fallback;
  const before = lastTool >= 0 && !(step.name || step.input) ? planned.slice(0, lastTool) : [];
  const json = JSON.stringify(tool.input);
  const truncatedLastToolJson = json.slice(0, Math.max(1, Math.floor(json.length / 2)));
  const reply: OfflineReply = { content: [...before, { type: "tool_use", name: tool.name, input: tool.input }], stop_reason: "max_tokens" };
  return { reply, truncatedLastToolJson };
}

/** Fills in what the API always sends: tool ids (deterministic per request and position), citations, caller. */
function toWireContent(blocks: OfflineContentBlock[], req: OfflineRequest): WireMessage["content"] {
  return blocks.map((b, index) => {
    if (b.type === "text") return { type: "text", text: b.text, citations: null };
    return {
      type: "tool_use",
      id: b.id ?? stableId("toolu_", req.messages, index, b.name, b.input),
      name: b.name,
      input: b.input ?? {},
      caller: { type: "direct" },
    };
  }) as WireMessage["content"];
}
