import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic, { type APIError } from "@anthropic-ai/sdk";
import { classifyModelError, createModelClient, DEFAULT_MODEL, estimateCostMicros } from "./client";
import { createOfflineFetch, OfflineScript, type OfflineStep } from "./offline";
import { offlineClient, replyText, SYSTEM, TOOLS, toolUses } from "./test-fixtures";
import type { MessageParam, ModelRequest } from "./types";

const ask = (text: string): ModelRequest => ({
  system: SYSTEM,
  tools: TOOLS,
  messages: [{ role: "user", content: text }],
  maxTokens: 1024,
});
const signedIn = (text: string): ModelRequest => ({
  system: SYSTEM,
  tools: TOOLS,
  maxTokens: 1024,
  messages: [
    {
      role: "user",
      content: [
        { type: "text", text: "[context] The shop signed the customer in as dana@example.com." },
        { type: "text", text },
      ],
    },
  ],
});

/** Sends the same request with its own fresh offline fetch (own prompt cache) in JSON and stream form. */
async function bothForms(req: ModelRequest, steps: OfflineStep[] = []) {
  const json = offlineClient({ script: new OfflineScript(steps) });
  const sse = offlineClient({ script: new OfflineScript(steps) });
  const deltas: string[] = [];
  const a = await json.client.send(req);
  const b = await sse.client.send(req, { stream: true, onTextDelta: (t) => deltas.push(t) });
  return { json: a.message, stream: b.message, deltas };
}

describe("createModelClient", () => {
  const saved = { key: process.env.ANTHROPIC_API_KEY, model: process.env.ANTHROPIC_MODEL };
  afterEach(() => {
    if (saved.key === undefined) delete process.env.ANTHROPIC_API_KEY;
    else process.env.ANTHROPIC_API_KEY = saved.key;
    if (saved.model === undefined) delete process.env.ANTHROPIC_MODEL;
    else process.env.ANTHROPIC_MODEL = saved.model;
  });

  it("is the offline model when no API key is set", async () => {
    delete process.env.ANTHROPIC_API_KEY;
    const client = createModelClient({ maxRetries: 0 });
    expect(client.mode).toBe("offline");
    const { message, latencyMs } = await client.send(ask("hi"));
    expect(message.stop_reason).toBe("end_turn");
    expect(replyText(message)).toMatch(/How can I help/);
    expect(latencyMs).toBeGreaterThanOrEqual(0);
  });

  it("is Claude when a key is set: model from ANTHROPIC_MODEL, requests to the base URL with the key", async () => {
    process.env.ANTHROPIC_API_KEY = "sk-test";
    process.env.ANTHROPIC_MODEL = "claude-test-model";
    const seen: Array<{ url: string; auth: string | null; model: string }> = [];
    const offline = createOfflineFetch();
    const spy: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      seen.push({
        url: String(input),
        auth: headers.get("x-api-key") ?? headers.get("authorization"),
        model: JSON.parse(String(init?.body)).model,
      });
      return offline(input, init);
    };
    const client = createModelClient({ fetch: spy, baseURL: "http://claude.test", maxRetries: 0 });
    expect(client.mode).toBe("claude");
    expect(client.model).toBe("claude-test-model");
    await client.send(ask("hi"));
    expect(seen[0]!.url).toBe("http://claude.test/v1/messages");
    expect(seen[0]!.auth).toContain("sk-test");
    expect(seen[0]!.model).toBe("claude-test-model");
    delete process.env.ANTHROPIC_MODEL;
    expect(createModelClient({ fetch: spy }).model).toBe(DEFAULT_MODEL);
  });

  it("marks the stable prefix for prompt caching: the system block and the last tool only", async () => {
    const { client, script } = offlineClient();
    await client.send(ask("hi"));
    const body = script.requests[0]!;
    expect(body.system).toEqual([{ type: "text", text: SYSTEM, cache_control: { type: "ephemeral" } }]);
    expect(body.tools!.at(-1)!.cache_control).toEqual({ type: "ephemeral" });
    expect(body.tools!.slice(0, -1).every((t) => t.cache_control === undefined)).toBe(true);
  });

  it("reports cache writes the first time a prefix is seen and cache reads after, and prices them", async () => {
    const { client } = offlineClient();
    const first = (await client.send(ask("hi"))).message.usage;
    const second = (await client.send(ask("hello again"))).message.usage;
    expect(first.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(first.cache_read_input_tokens).toBe(0);
    expect(second.cache_creation_input_tokens).toBe(0);
    expect(second.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    expect(first.input_tokens).toBeGreaterThan(0);
    expect(first.output_tokens).toBeGreaterThan(0);
    // The same usage always gives the same estimate (deterministic tokens).
    expect((await offlineClient().client.send(ask("hi"))).message.usage).toEqual(first);
  });
});

describe("estimateCostMicros", () => {
  it.each([
    ["claude-sonnet-4-5", { input_tokens: 1_000_000, output_tokens: 0 }, 3_000_000],
    ["claude-sonnet-4-5", { input_tokens: 0, output_tokens: 1_000 }, 15_000],
    [
      "claude-sonnet-4-5-20250929",
      { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 1_000, cache_read_input_tokens: 10_000 },
      3_750 + 3_000,
    ],
    ["claude-haiku-4-5", { input_tokens: 1_000, output_tokens: 1_000 }, 1_000 + 5_000],
    ["claude-opus-4-1", { input_tokens: 1_000, output_tokens: 1_000 }, 15_000 + 75_000],
    ["some-future-model", { input_tokens: 1_000, output_tokens: 0 }, 3_000],
    ["offline-support-model", { input_tokens: 5_000, output_tokens: 500 }, 0],
  ])("%s %j → %i micro-dollars", (model, usage, expected) => {
    expect(estimateCostMicros(model, usage)).toBe(expected);
  });
});

describe("JSON and streaming forms", () => {
  it.each([
    ["a text reply", ask("hi"), []],
    ["parallel tool calls", signedIn("Where is A-1003? Also please refund A-1001"), []],
    [
      "a scripted unknown stop_reason",
      ask("hi"),
      [{ reply: { content: [{ type: "text", text: "Hmm." }], stop_reason: "weird_new_reason" } }],
    ],
    [
      "a scripted refusal",
      ask("hi"),
      [{ reply: { content: [{ type: "text", text: "I can't help with that." }], stop_reason: "refusal" } }],
    ],
    [
      "a scripted stop_sequence",
      ask("hi"),
      [{ reply: { content: [{ type: "text", text: "Done" }], stop_reason: "stop_sequence", stop_sequence: "END" } }],
    ],
  ] as Array<[string, ModelRequest, OfflineStep[]]>)("give identical messages: %s", async (_name, req, steps) => {
    const { json, stream, deltas } = await bothForms(req, steps);
    // The stream helper adds its own `parsed_output` (null without an output format); the API message is identical.
    const { parsed_output, ...streamed } = stream as typeof stream & { parsed_output?: unknown };
    expect(parsed_output).toBeNull();
    expect(streamed).toEqual(json);
    const text = replyText(json);
    expect(deltas.join("")).toBe(text);
    if (text.split(" ").length > 3) expect(deltas.length).toBeGreaterThan(1);
  });

  it("streams tool input as several input_json_delta fragments that the SDK assembles", async () => {
    const fetchFn = createOfflineFetch();
    const req = signedIn("change the address of A-2002 to 12 New Street, Springfield, 12345, US");
    const client = new Anthropic({ apiKey: "offline", baseURL: "http://offline.model", fetch: fetchFn, maxRetries: 0 });
    const stream = client.messages.stream({ model: "m", max_tokens: 100, system: req.system, tools: req.tools, messages: req.messages });
    const fragments: string[] = [];
    stream.on("inputJson", (partial) => fragments.push(partial));
    const message = await stream.finalMessage();
    const [use] = toolUses(message);
    expect(message.stop_reason).toBe("tool_use");
    expect(use!.input).toEqual({
      order_number: "A-2002",
      address: { line1: "12 New Street", city: "Springfield", postalCode: "12345", country: "US" },
    });
    expect(fragments.length).toBeGreaterThan(1);
    expect(fragments.join("")).toBe(JSON.stringify(use!.input));
    // No single fragment is the whole input: the SDK really had to assemble it.
    expect(fragments.every((f) => f !== JSON.stringify(use!.input))).toBe(true);
  });

  it("cuts a tool_use mid-JSON on max_tokens: partial input in the stream, {} in JSON", async () => {
    const req = signedIn("refund $150 of A-1002");
    const { json, stream } = await bothForms(req, [{ cutToolUse: true }]);
    for (const m of [json, stream]) {
      expect(m.stop_reason).toBe("max_tokens");
      expect(m.content.at(-1)!.type).toBe("tool_use");
    }
    expect(toolUses(json).at(-1)!.input).toEqual({});
    const partial = toolUses(stream).at(-1)!.input as Record<string, unknown>;
    expect(partial).not.toEqual({ order_number: "A-1002", amount_cents: 15000, reason: expect.anything() });
    expect(Object.keys(partial).length).toBeLessThan(3);
  });
});

describe("faults surface as the SDK's error classes", () => {
  it("429 with maxRetries 0 → RateLimitError at once", async () => {
    const { client, script } = offlineClient({ script: new OfflineScript([{ http: 429 }]), maxRetries: 0 });
    const err = await client.send(ask("hi")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    expect((err as APIError).type).toBe("rate_limit_error");
    expect(classifyModelError(err)).toEqual({ retryable: true, kind: "rate_limit", status: 429 });
    expect(script.requests).toHaveLength(1);
  });

  it("429 is retried by the SDK (honouring retry-after) and succeeds within maxRetries", async () => {
    const script = new OfflineScript([
      { http: 429, retryAfterSeconds: 0.01 },
      { http: 429, retryAfterSeconds: 0.01 },
    ]);
    const { client } = offlineClient({ script, maxRetries: 2 });
    const { message } = await client.send(ask("hi"));
    expect(message.stop_reason).toBe("end_turn");
    expect(script.requests).toHaveLength(3);
  });

  it("429 past maxRetries → RateLimitError after the SDK's own retries", async () => {
    const script = new OfflineScript([1, 2, 3].map(() => ({ http: 429 as const, retryAfterSeconds: 0.01 })));
    const { client } = offlineClient({ script, maxRetries: 2 });
    await expect(client.send(ask("hi"))).rejects.toBeInstanceOf(Anthropic.RateLimitError);
    expect(script.requests).toHaveLength(3);
  });

  it.each([
    [529, Anthropic.OverloadedError, "overloaded", true],
    [500, Anthropic.InternalServerError, "server", true],
    [400, Anthropic.BadRequestError, "bad_request", false],
  ] as const)("%i → %s (%s)", async (status, cls, kind, retryable) => {
    const { client, script } = offlineClient({ script: new OfflineScript([{ http: status }]), maxRetries: 0 });
    const err = await client.send(ask("hi"), { stream: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(cls);
    expect(classifyModelError(err)).toEqual({ retryable, kind, status });
    expect(script.pending).toBe(0);
  });

  it("400 is not retried even with retries left", async () => {
    const script = new OfflineScript([{ http: 400 }]);
    const { client } = offlineClient({ script, maxRetries: 2 });
    await expect(client.send(ask("hi"))).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    expect(script.requests).toHaveLength(1);
  });

  it("a request that never answers → APIConnectionTimeoutError", async () => {
    const { client } = offlineClient({ script: new OfflineScript([{ timeout: true }]), maxRetries: 0, timeoutMs: 50 });
    const err = await client.send(ask("hi")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIConnectionTimeoutError);
    expect(classifyModelError(err)).toEqual({ retryable: true, kind: "timeout" });
  });

  it("a timeout is retried by the SDK when retries are left", async () => {
    const script = new OfflineScript([{ timeout: true }]);
    const { client } = offlineClient({ script, maxRetries: 1, timeoutMs: 50 });
    const { message } = await client.send(ask("hi"), { stream: true });
    expect(message.stop_reason).toBe("end_turn");
    expect(script.requests).toHaveLength(2);
  });

  it("the caller's abort → APIUserAbortError, never retried", async () => {
    const { client } = offlineClient({ script: new OfflineScript([{ timeout: true }]), maxRetries: 2 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const err = await client.send(ask("hi"), { signal: controller.signal }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.APIUserAbortError);
    expect(classifyModelError(err).retryable).toBe(false);
  });

  it.each([
    [new Anthropic.APIConnectionError({ message: "socket hang up" }), { retryable: true, kind: "connection" }],
    [new Anthropic.AuthenticationError(401, {}, "bad key", new Headers()), { retryable: false, kind: "auth", status: 401 }],
    [
      new Anthropic.APIError(
        undefined,
        { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
        undefined,
        undefined,
      ),
      { retryable: true, kind: "overloaded" },
    ],
    [new Error("boom"), { retryable: false, kind: "unknown" }],
  ])("classifies %s", (err, expected) => {
    expect(classifyModelError(err)).toEqual(expected);
  });
});

describe("transcript validation (400 invalid_request_error, like the API)", () => {
  const use = (id: string) => ({ type: "tool_use" as const, id, name: "lookup_order", input: { order_number: "A-1001" } });
  const result = (id: string) => ({ type: "tool_result" as const, tool_use_id: id, content: "{}" });
  const send = async (messages: MessageParam[]) => {
    const { client } = offlineClient();
    return client.send({ system: SYSTEM, tools: TOOLS, messages, maxTokens: 100 }).catch((e: unknown) => e);
  };

  it.each([
    [
      "a dangling tool_use",
      [
        { role: "user", content: "hi" },
        { role: "assistant", content: [use("toolu_a")] },
        { role: "user", content: "hello?" },
      ],
      /without `tool_result`.*toolu_a/,
    ],
    [
      "a tool_use as the last message",
      [
        { role: "user", content: "hi" },
        { role: "assistant", content: [use("toolu_a")] },
      ],
      /toolu_a/,
    ],
    [
      "one of two parallel calls unanswered",
      [
        { role: "user", content: "hi" },
        { role: "assistant", content: [use("toolu_a"), use("toolu_b")] },
        { role: "user", content: [result("toolu_a")] },
      ],
      /toolu_b/,
    ],
    [
      "an unknown tool_use_id",
      [
        { role: "user", content: "hi" },
        { role: "assistant", content: [use("toolu_a")] },
        { role: "user", content: [result("toolu_a"), result("toolu_x")] },
      ],
      /unexpected `tool_use_id`.*toolu_x/,
    ],
    [
      "text before a tool_result",
      [
        { role: "user", content: "hi" },
        { role: "assistant", content: [use("toolu_a")] },
        { role: "user", content: [{ type: "text", text: "wait" }, result("toolu_a")] },
      ],
      /must come first/,
    ],
    [
      "an assistant first message",
      [
        { role: "assistant", content: "Hello" },
        { role: "user", content: "hi" },
      ],
      /first message must use the "user" role/,
    ],
    [
      "a result answering an older turn",
      [
        { role: "user", content: "hi" },
        { role: "assistant", content: [use("toolu_a")] },
        { role: "user", content: [result("toolu_a")] },
        { role: "assistant", content: "ok" },
        { role: "user", content: [result("toolu_a")] },
      ],
      /unexpected `tool_use_id`/,
    ],
  ] as Array<[string, MessageParam[], RegExp]>)("rejects %s", async (_name, messages, pattern) => {
    const err = await send(messages);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as APIError).type).toBe("invalid_request_error");
    expect((err as APIError).apiMessage).toMatch(pattern);
  });

  it("accepts consecutive same-role messages (merged) with results first and late customer text after", async () => {
    const err = await send([
      { role: "user", content: "[context] The shop signed the customer in as dana@example.com." },
      { role: "user", content: "where is A-1001" },
      { role: "assistant", content: [use("toolu_a"), use("toolu_b")] },
      { role: "user", content: [result("toolu_a")] },
      { role: "user", content: [result("toolu_b"), { type: "text", text: "also, thanks" }] },
    ]);
    expect(err).not.toBeInstanceOf(Error);
  });
});

describe("OfflineScript", () => {
  it("consumes steps in order, one per request, then falls back to the support model", async () => {
    const seen: number[] = [];
    const script = new OfflineScript().push(
      { reply: { content: [{ type: "text", text: "first" }], stop_reason: "end_turn" } },
      {
        parallel: [
          { name: "lookup_order", input: { order_number: "A-1001" } },
          { name: "lookup_order", input: { order_number: "A-1002" } },
        ],
      },
      {
        fn: (req) => {
          seen.push(req.messages.length);
          return { reply: { content: [{ type: "text", text: "computed" }], stop_reason: "pause_turn" } };
        },
      },
    );
    const { client } = offlineClient({ script });
    expect(script.pending).toBe(3);
    expect(replyText((await client.send(ask("a"))).message)).toBe("first");
    const parallel = (await client.send(ask("b"))).message;
    expect(parallel.stop_reason).toBe("tool_use");
    const ids = toolUses(parallel).map((u) => u.id);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    expect(ids.every((id) => /^toolu_[A-Za-z0-9]+$/.test(id))).toBe(true);
    const computed = (await client.send(ask("c"))).message;
    expect([replyText(computed), computed.stop_reason]).toEqual(["computed", "pause_turn"]);
    expect(seen).toEqual([1]);
    expect(script.pending).toBe(0);
    expect(replyText((await client.send(ask("hi"))).message)).toMatch(/How can I help/);
    expect(script.requests.map((r) => r.messages[0]!.content as string)).toEqual(["a", "b", "c", "hi"]);
  });

  it("gives deterministic, per-request tool ids", async () => {
    const req = signedIn("Where is A-1003? Also please refund A-1001");
    const a = toolUses((await offlineClient().client.send(req)).message).map((u) => u.id);
    const b = toolUses((await offlineClient().client.send(req)).message).map((u) => u.id);
    expect(a).toEqual(b);
    const other = toolUses((await offlineClient().client.send(signedIn("Where is A-1003? Also please refund A-1004"))).message).map(
      (u) => u.id,
    );
    expect(other.some((id) => a.includes(id))).toBe(false);
  });

  it("loads a script file named by SUPPORT_OFFLINE_SCRIPT, shared by every process that reads it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "offline-script-"));
    const file = join(dir, "script.json");
    writeFileSync(
      file,
      JSON.stringify([{ http: 529 }, { reply: { content: [{ type: "text", text: "from file" }], stop_reason: "end_turn" } }]),
    );
    process.env.SUPPORT_OFFLINE_SCRIPT = file;
    try {
      // Two fetch instances stand for two processes (web server, worker) scripted by the same file.
      const first = createModelClient({ fetch: createOfflineFetch(), maxRetries: 0, apiKey: undefined });
      const second = createModelClient({ fetch: createOfflineFetch(), maxRetries: 0, apiKey: undefined });
      await expect(first.send(ask("hi"))).rejects.toBeInstanceOf(Anthropic.OverloadedError);
      expect(replyText((await second.send(ask("hi"))).message)).toBe("from file");
      expect(replyText((await first.send(ask("hi"))).message)).toMatch(/How can I help/);
      expect(OfflineScript.fromFile(file).pending).toBe(0);
    } finally {
      delete process.env.SUPPORT_OFFLINE_SCRIPT;
    }
  });
});

describe("the default model", () => {
  it("is current: not on the SDK's own list of deprecated models, and what the environment defaults to", async () => {
    const { createRequire } = await import("node:module");
    const require = createRequire(import.meta.url);
    const sdkDir = require.resolve("@anthropic-ai/sdk").replace(/index\.js$/, "");
    const { DEPRECATED_MODELS } = require(`${sdkDir}internal/data/deprecated-models.js`) as { DEPRECATED_MODELS: Record<string, string> };
    expect(DEPRECATED_MODELS["claude-sonnet-4-5"]).toMatch(/November 30th, 2026/);
    expect(Object.keys(DEPRECATED_MODELS)).not.toContain(DEFAULT_MODEL);
    const { env } = await import("@/lib/env");
    expect(env().ANTHROPIC_MODEL).toBe(DEFAULT_MODEL);
  });
});
