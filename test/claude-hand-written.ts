/**
 * The first fixtures' responses, written by hand to the Messages API's documented wire format (no API key was
 * available): `npm run record -- --hand-written` serves these to the runtime under the recording fetch, so the
 * fixtures' requests are exactly what the runtime sends and their responses are these. A real recording
 * (`npm run record` with ANTHROPIC_API_KEY) replaces every recordable scenario.
 *
 * The wire format followed: a JSON message `{model, id, type, role, content, stop_reason, stop_sequence,
 * stop_details, usage}`; a stream `message_start` (the message with empty content, input usage, output_tokens 1) →
 * per block `content_block_start` / `content_block_delta`* / `content_block_stop` (a tool_use's input as
 * `input_json_delta` fragments, the first one empty) → `ping` → `message_delta` (stop reason, cumulative usage) →
 * `message_stop`; errors `{type: "error", error: {type, message}, request_id}` with 429 `rate_limit_error` (and
 * `retry-after`) and 529 `overloaded_error`; usage with `cache_creation_input_tokens` / `cache_read_input_tokens`
 * (the system prompt and tools are written to the cache on a scenario's first request and read afterwards).
 */
import { createHash } from "node:crypto";

type Block = { type: "text"; text: string } | { type: "tool_use"; name: string; input: Record<string, unknown> };
export type HandStep = { content: Block[]; stop: string; output: number } | { error: 429 | 529; retryAfter?: string };

const text = (t: string): Block => ({ type: "text", text: t });
const tool = (name: string, input: Record<string, unknown>): Block => ({ type: "tool_use", name, input });

export const HAND_WRITTEN: Record<string, HandStep[]> = {
  "status-question": [
    { content: [text("Let me look up A-1001 for you."), tool("lookup_order", { order_number: "A-1001" })], stop: "tool_use", output: 64 },
    {
      content: [text("Your order A-1001 has been delivered — UPS tracking 1Z9A7E3W0300001001 shows it as delivered.")],
      stop: "end_turn",
      output: 31,
    },
  ],
  "refund-auto": [
    { content: [tool("verify_customer", { email: "dana@example.com", order_number: "A-1001" })], stop: "tool_use", output: 72 },
    {
      content: [text("Thanks, Dana. Let me check A-1001."), tool("lookup_order", { order_number: "A-1001" })],
      stop: "tool_use",
      output: 61,
    },
    {
      content: [tool("refund_order", { order_number: "A-1001", amount_cents: 4250, reason: "The zipper broke after a week" })],
      stop: "tool_use",
      output: 88,
    },
    {
      content: [text("Done — I've refunded $42.50 on order A-1001 to your original payment method. Sorry about the zipper, Dana.")],
      stop: "end_turn",
      output: 33,
    },
  ],
  "refund-approval": [
    { content: [tool("lookup_order", { order_number: "A-1002" })], stop: "tool_use", output: 52 },
    {
      content: [
        text("I'm sorry it arrived torn. I'll request the full $250.00 refund for A-1002."),
        tool("refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "Arrived torn" }),
      ],
      stop: "tool_use",
      output: 97,
    },
    {
      content: [text("Good news, Dana: our team approved it, and I've refunded $250.00 on order A-1002 to your original payment method.")],
      stop: "end_turn",
      output: 35,
    },
  ],
  "lost-parcel": [
    { content: [tool("lookup_order", { order_number: "A-1003" })], stop: "tool_use", output: 52 },
    {
      content: [
        text("I'm sorry — A-1003 was lost in transit. A refund of $820.00 needs a person on our team, so I'm passing this on now."),
        tool("escalate_to_human", {
          trigger: "policy_gap",
          summary: "Order A-1003 ($820.00) is marked lost by UPS. The customer asks for a full refund today.",
          tried: "Looked up the order: shipment status lost.",
          root_cause: "Carrier lost the parcel.",
          recommended_action: "Refund $820.00 or send a replacement.",
          order_number: "A-1003",
          amount_cents: 82000,
        }),
      ],
      stop: "tool_use",
      output: 164,
    },
    {
      content: [text("I've passed your case to our team with all the details; they'll follow up here about A-1003.")],
      stop: "end_turn",
      output: 27,
    },
  ],
  "stop-reasons": [
    { content: [text("Of course. Order A-1001 was placed on")], stop: "max_tokens", output: 1024 },
    { content: [], stop: "refusal", output: 3 },
  ],
  overloaded: [
    { error: 529 },
    { error: 429, retryAfter: "2" },
    { content: [tool("lookup_order", { order_number: "A-1001" })], stop: "tool_use", output: 52 },
    { content: [text("A-1001 was delivered; UPS tracking 1Z9A7E3W0300001001 shows it as delivered.")], stop: "end_turn", output: 26 },
  ],
};

/** Ids shaped like the API's (`msg_01…`, `toolu_01…`, `req_011C…`), derived from the scenario so they never change. */
function apiId(prefix: string, ...parts: unknown[]): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const digest = createHash("sha256").update(JSON.stringify(parts)).digest();
  let out = "";
  for (let i = 0; i < 22; i++) out += alphabet[digest[i]! % alphabet.length];
  return `${prefix}${out}`;
}

/** The stable prefix (system prompt + tools), in tokens: written to the cache by a scenario's first request. */
const PREFIX_TOKENS = 2318;

/** Word-aligned text deltas of a few words each, as a stream carries them. */
function textDeltas(t: string): string[] {
  const words = t.match(/\S+\s*/g) ?? [t];
  const out: string[] = [];
  for (let i = 0; i < words.length; i += 4) out.push(words.slice(i, i + 4).join(""));
  return out;
}

function jsonFragments(json: string): string[] {
  const out = [""];
  for (let i = 0; i < json.length; i += 24) out.push(json.slice(i, i + 24));
  return out;
}

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * A `fetch` answering a scenario's requests with its hand-written steps, in order, as the API would: JSON, or SSE
 * when the body says `stream: true`; count_tokens from the same estimate the usage uses.
 */
export function handWrittenFetch(scenario: string): typeof fetch {
  const steps = HAND_WRITTEN[scenario];
  if (!steps) throw new Error(`no hand-written responses for scenario ${scenario}`);
  let next = 0;
  let cached = false;
  const f = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const body = JSON.parse(String(init?.body ?? "{}")) as { model: string; stream?: boolean; messages: unknown[] };
    const rest = Math.ceil(JSON.stringify(body.messages).length / 4);
    const requestId = apiId("req_011C", scenario, url.pathname, next, "request");
    if (url.pathname.endsWith("/count_tokens")) {
      return new Response(JSON.stringify({ input_tokens: PREFIX_TOKENS + rest }), {
        headers: { "content-type": "application/json", "request-id": requestId },
      });
    }
    const index = next++;
    const step = steps[index];
    if (!step) throw new Error(`hand-written ${scenario}: request ${index + 1} has no hand-written response (${steps.length} written)`);
    if ("error" in step) {
      const error =
        step.error === 529
          ? { type: "overloaded_error", message: "Overloaded" }
          : {
              type: "rate_limit_error",
              message: "This request would exceed the rate limit for your organization. Please try again later.",
            };
      return new Response(JSON.stringify({ type: "error", error, request_id: requestId }), {
        status: step.error,
        headers: {
          "content-type": "application/json",
          "request-id": requestId,
          ...(step.retryAfter ? { "retry-after": step.retryAfter } : {}),
          ...(step.error === 429 ? { "anthropic-ratelimit-requests-remaining": "0" } : {}),
        },
      });
    }
    const write = cached ? 0 : PREFIX_TOKENS;
    const read = cached ? PREFIX_TOKENS : 0;
    cached = true;
    const content = step.content.map((b, i) =>
      b.type === "text"
        ? { type: "text", text: b.text }
        : { type: "tool_use", id: apiId("toolu_01", scenario, index, i), name: b.name, input: b.input, caller: { type: "direct" } },
    );
    const usage = {
      input_tokens: rest,
      cache_creation_input_tokens: write,
      cache_read_input_tokens: read,
      cache_creation: { ephemeral_5m_input_tokens: write, ephemeral_1h_input_tokens: 0 },
      output_tokens: step.output,
      service_tier: "standard",
    };
    const stopDetails = step.stop === "refusal" ? { type: "refusal", category: null, explanation: null } : null;
    const message = {
      model: body.model,
      id: apiId("msg_01", scenario, index),
      type: "message",
      role: "assistant",
      content,
      stop_reason: step.stop,
      stop_sequence: null,
      stop_details: stopDetails,
      usage,
    };
    const headers = { "request-id": requestId, "anthropic-ratelimit-requests-remaining": "49" };
    if (!body.stream) return new Response(JSON.stringify(message), { headers: { "content-type": "application/json", ...headers } });
    const frames = [
      frame("message_start", {
        type: "message_start",
        message: { ...message, content: [], stop_reason: null, stop_details: null, usage: { ...usage, output_tokens: 1 } },
      }),
    ];
    content.forEach((b, index) => {
      if (b.type === "text") {
        frames.push(frame("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } }));
        if (index === 0) frames.push(frame("ping", { type: "ping" }));
        for (const t of textDeltas(b.text as string))
          frames.push(frame("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: t } }));
      } else {
        frames.push(frame("content_block_start", { type: "content_block_start", index, content_block: { ...b, input: {} } }));
        if (index === 0) frames.push(frame("ping", { type: "ping" }));
        for (const partial_json of jsonFragments(JSON.stringify(b.input)))
          frames.push(
            frame("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } }),
          );
      }
      frames.push(frame("content_block_stop", { type: "content_block_stop", index }));
    });
    frames.push(
      frame("message_delta", {
        type: "message_delta",
        delta: { stop_reason: step.stop, stop_sequence: null, stop_details: stopDetails },
        usage: { input_tokens: rest, cache_creation_input_tokens: write, cache_read_input_tokens: read, output_tokens: step.output },
      }),
      frame("message_stop", { type: "message_stop" }),
    );
    return new Response(frames.join(""), {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", ...headers },
    });
  };
  return f as typeof fetch;
}
