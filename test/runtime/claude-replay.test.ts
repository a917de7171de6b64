// The Claude path in CI without a key or a network (issue 10.4): each fixture in test/fixtures/claude/ is replayed
// through the real @anthropic-ai/sdk client (its fetch is lib/model/replay) and the real runtime on a real
// PostgreSQL, and what the runtime recorded is checked against what the fixture says the API answered.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import { harnessPerTest } from "./harness-per-test";
import { CLAUDE_SCENARIOS, playScenario, scenarioNamed, sensitiveValues } from "../claude-scenarios";
import { createModelClient, estimateCostMicros } from "@/lib/model/client";
import { createOfflineFetch } from "@/lib/model/offline";
import {
  type ClaudeFixture,
  createRecordingFetch,
  createReplayFetch,
  fixtureBody,
  fixtureFrom,
  type Replay,
  requestMismatches,
} from "@/lib/model/replay";
import { runWorkerOnce } from "@/lib/runtime/worker";

const FIXTURES = path.join(process.cwd(), "test", "fixtures", "claude");
const load = (name: string): ClaudeFixture => JSON.parse(readFileSync(path.join(FIXTURES, `${name}.json`), "utf8"));

let h: Harness;
harnessPerTest((harness) => (h = harness), { harness: { specialists: true } }); // the shop as seeded, as `npm run record` plays it

function replayDeps(fixture: ClaudeFixture, maxRetries: number): { replay: Replay; deps: Harness["deps"] } {
  const replay = createReplayFetch(fixture);
  const model = createModelClient({
    apiKey: "sk-ant-replay",
    fetch: replay.fetch,
    model: fixture.header.model,
    maxRetries,
    timeoutMs: 5000,
  });
  expect(model.mode).toBe("claude");
  return { replay, deps: h.newDeps("replay-worker", model) };
}

async function play(name: string) {
  const fixture = load(name);
  const scenario = scenarioNamed(name);
  const { replay, deps } = replayDeps(fixture, scenario.maxRetries);
  const played = await playScenario(deps, scenario);
  replay.assertDone();
  const calls = await h.db.modelCall.findMany({ where: { runId: { in: played.runIds } }, orderBy: { createdAt: "asc" } });
  return { fixture, replay, played, calls };
}

/** The usage the fixture's successful /v1/messages responses carry, in order (JSON, or a stream's message_delta). */
function recordedUsage(fixture: ClaudeFixture) {
  return fixture.exchanges
    .filter((x) => x.request.path === "/v1/messages" && x.response.status === 200)
    .map((x) => {
      if (x.response.json) return (x.response.json as { usage: Record<string, number> }).usage;
      const delta = x.response.sse!.find((f) => typeof f !== "string" && f.event === "message_delta") as {
        data: { usage: Record<string, number> };
      };
      return delta.data.usage;
    });
}

describe("Claude fixtures replayed through the real SDK and runtime", () => {
  it("every fixture says where it came from, and no secret or personal datum is left in it", () => {
    for (const s of CLAUDE_SCENARIOS) {
      const f = load(s.name);
      expect(f.header.scenario).toBe(s.name);
      expect(["recorded", "hand-written"]).toContain(f.header.source);
      if (f.header.source === "hand-written") expect(f.header.note).toMatch(/NOT recorded from Claude/);
      const text = JSON.stringify(f);
      expect(text).not.toMatch(/sk-ant-|dana@example\.com|Dana Reyes|214 Alder Street|97204/);
      for (const x of f.exchanges)
        for (const k of ["x-api-key", "authorization"]) expect(x.request.headers[k] ?? "«scrubbed»").toBe("«scrubbed»");
    }
  });

  it("status question (JSON): tool_use then end_turn; usage with cache writes then reads, priced as such", async () => {
    const { fixture, played, calls, replay } = await play("status-question");
    expect(played.phases).toEqual(["COMPLETED"]);
    expect(played.replies.join("\n")).toMatch(/A-1001 has been delivered/);
    expect(calls.map((c) => c.stopReason)).toEqual(["tool_use", "end_turn"]);
    const usage = recordedUsage(fixture);
    expect(calls.map((c) => [c.inputTokens, c.cacheWriteTokens, c.cacheReadTokens, c.outputTokens])).toEqual(
      usage.map((u) => [u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens, u.output_tokens]),
    );
    // The prefix is written once (1.25× input price) and read afterwards (0.1×): Sonnet is $3 in, $15 out per Mtok.
    expect(calls[0]!.cacheWriteTokens).toBeGreaterThan(0);
    expect(calls[1]!.cacheReadTokens).toBe(calls[0]!.cacheWriteTokens);
    for (const [i, c] of calls.entries()) {
      const u = usage[i]!;
      const expected = Math.round(
        u.input_tokens! * 3 + u.cache_creation_input_tokens! * 3.75 + u.cache_read_input_tokens! * 0.3 + u.output_tokens! * 15,
      );
      expect(c.costMicros).toBe(expected);
      expect(c.costMicros).toBe(estimateCostMicros(c.model, u as never));
    }
    expect(calls[1]!.costMicros).toBeLessThan(calls[0]!.costMicros);
    const run = await h.db.run.findUniqueOrThrow({ where: { id: played.runIds[0] } });
    expect(run.costMicros).toBe(calls[0]!.costMicros + calls[1]!.costMicros);
    expect(replay.bindings.get("«email-1»")).toBe("dana@example.com");
  });

  it("refund under the automatic limit (streamed): verified from the chat, refunded once, the deltas assembled", async () => {
    const { fixture, played, calls } = await play("refund-auto");
    expect(played.phases).toEqual(["COMPLETED"]);
    expect(calls.map((c) => c.stopReason)).toEqual(["tool_use", "tool_use", "tool_use", "end_turn"]);
    const effects = await h.effects();
    expect(effects.map((e) => e.toolName)).toEqual(["refund_order"]);
    // The reply is what the text_delta events of the last stream spell, with the customer's name put back.
    const last = fixture.exchanges[fixture.exchanges.length - 1]!.response.sse!;
    const spelled = last
      .filter((f) => typeof f !== "string" && f.event === "content_block_delta")
      .map((f) => (f as { data: { delta: { text?: string } } }).data.delta.text ?? "")
      .join("")
      .replaceAll("«name-1»", "Dana");
    expect(played.replies).toEqual([spelled]);
    expect(played.drafts.length).toBeGreaterThan(0);
    expect(spelled.startsWith(played.drafts[played.drafts.length - 1]!)).toBe(true);
    const response = calls[3]!.response as { content: Array<{ text: string }> };
    expect(response.content[0]!.text).toBe(spelled);
  });

  it("refund over the limit (streamed): parks, a reviewer approves, the run resumes, the refund runs once", async () => {
    const { played, calls } = await play("refund-approval");
    expect(played.phases).toEqual(["WAITING_FOR_APPROVAL", "COMPLETED"]);
    expect(calls.map((c) => c.stopReason)).toEqual(["tool_use", "tool_use", "end_turn"]);
    expect((await h.effects()).map((e) => e.toolName)).toEqual(["refund_order"]);
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } });
    expect(order.refundedCents).toBe(25000);
    expect(played.replies.join("\n")).toMatch(/approved it, and I've refunded \$250\.00 on order A-1002/);
  });

  it("lost parcel (streamed): escalated to a person with the model's record, nothing executed", async () => {
    const { played, calls } = await play("lost-parcel");
    expect(calls.map((c) => c.stopReason)).toEqual(["tool_use", "tool_use", "end_turn"]);
    expect(await h.effects()).toHaveLength(0);
    const [esc] = await h.db.handoff.findMany({ where: { conversationId: played.conversationId, kind: "ESCALATION" } });
    expect(esc!.payload).toMatchObject({ trigger: "policy_gap" });
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: played.conversationId } })).status).toBe("escalated");
  });

  it("max_tokens is retried with the larger limit; a refusal hands off with an honest message", async () => {
    const { played, calls } = await play("stop-reasons");
    expect(calls.map((c) => [c.stopReason, c.maxTokens])).toEqual([
      ["max_tokens", 1024],
      ["refusal", 4096],
    ]);
    expect(played.phases).toEqual(["ESCALATED"]);
    expect(played.replies.join(" ")).not.toContain("was placed on");
    const [esc] = await h.db.handoff.findMany({ where: { conversationId: played.conversationId, kind: "ESCALATION" } });
    expect(esc!.payload).toMatchObject({ trigger: "refusal" });
  });

  it("529 is retried by the SDK; the 429 after its retries costs the run one attempt, and a worker finishes it", async () => {
    const fixture = load("overloaded");
    const scenario = scenarioNamed("overloaded");
    const { replay, deps } = replayDeps(fixture, scenario.maxRetries);
    const first = await playScenario(deps, { ...scenario, steps: scenario.steps.slice(0, 1) });
    expect(first.phases).toEqual(["WAITING_FOR_RETRY"]);
    const runId = first.runIds[0]!;
    let run = await h.db.run.findUniqueOrThrow({ where: { id: runId } });
    expect(run.requestAttempts).toBe(1);
    // The SDK sent the request twice (its own retry after the 529), then gave up on the 429.
    expect(replay.log.map((e) => [e.exchange, e.headers["x-stainless-retry-count"]])).toEqual([
      [0, "0"],
      [1, "1"],
    ]);
    await new Promise((r) => setTimeout(r, Math.max(0, run.nextAttemptAt!.getTime() - Date.now()) + 5));
    await runWorkerOnce({ ...deps, drafts: { show: () => {}, end: () => {} } }); // the widget streams: so does the worker
    replay.assertDone();
    run = await h.db.run.findUniqueOrThrow({ where: { id: runId } });
    expect(run.phase).toBe("COMPLETED");
    expect(run.requestAttempts).toBe(0);
    const calls = await h.db.modelCall.findMany({ where: { runId }, orderBy: { createdAt: "asc" } });
    expect(calls.map((c) => c.error?.split(":")[0] ?? c.stopReason)).toEqual(["rate_limit", "tool_use", "end_turn"]);
  });
});

describe("the replay's matcher", () => {
  it("a request that drifts from the fixture fails with a readable diff (negative control)", async () => {
    const fixture = load("status-question");
    const { replay, deps } = replayDeps(fixture, 0);
    const scenario = scenarioNamed("status-question");
    const played = await playScenario(deps, { ...scenario, steps: [{ say: "Where is my order A-1004?", customer: "dana@example.com" }] });
    expect(played.phases).not.toEqual(["COMPLETED"]);
    expect(() => replay.assertDone()).toThrow(
      /claude replay \(status-question\): request 1 of 2 does not match the recording:\n {2}body\.messages\[0\]\.content\[1\]\.text: recorded ".*A-1001\?.*" but sent ".*A-1004\?.*"/,
    );
  });

  it("cache_control on messages is not matched (the client places it), but more than 4 breakpoints are refused like the API does", async () => {
    const recorded = load("status-question").exchanges[1]!.request;
    const sentBody = {
      model: recorded.body.model,
      max_tokens: recorded.body.max_tokens,
      system: [{ type: "text", text: "any prompt", cache_control: { type: "ephemeral" } }],
      tools: recorded.body.tools!.names.map((name, i, all) => ({
        name,
        description: "",
        input_schema: { type: "object" },
        ...(i === all.length - 1 ? { cache_control: { type: "ephemeral" } } : {}),
      })),
      messages: structuredClone(recorded.body.messages) as Array<{ content: Array<Record<string, unknown>> }>,
    };
    // The recorded messages with this run's values in place of the placeholders, and a moving breakpoint on the last one.
    const filled = JSON.parse(
      JSON.stringify(sentBody).replace(
        /«(\w+)-(\d+)»/g,
        (p) => ({ "«name-1»": "Dana", "«name-2»": "Reyes", "«email-1»": "dana@example.com" })[p] ?? p,
      ),
    );
    const last = filled.messages[filled.messages.length - 1].content;
    last[last.length - 1].cache_control = { type: "ephemeral" };
    const sent = { method: "POST", path: "/v1/messages", headers: recorded.headers, body: fixtureBody(filled) };
    expect(requestMismatches(recorded, sent)).toEqual([]);
    // The prefix breakpoints are matched: moving the tools' breakpoint is a drift.
    const moved = structuredClone(filled);
    delete moved.tools[moved.tools.length - 1].cache_control;
    moved.tools[0].cache_control = { type: "ephemeral" };
    expect(requestMismatches(recorded, { ...sent, body: fixtureBody(moved) }).join("\n")).toMatch(/body\.tools\.cache_control/);

    // Five breakpoints: answered with the API's 400 before any matching.
    const replay = createReplayFetch(load("status-question"));
    const five = structuredClone(filled);
    for (const m of five.messages) for (const b of m.content) b.cache_control = { type: "ephemeral" };
    const res = await replay.fetch("https://api.anthropic.com/v1/messages", { method: "POST", body: JSON.stringify(five) });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: { type: "invalid_request_error", message: expect.stringMatching(/maximum of 4 blocks with cache_control/) },
    });
  });

  it("record → scrub → replay round trip: a recording of the offline model replays to the same conversation", async () => {
    const scenario = scenarioNamed("refund-auto");
    const recording = createRecordingFetch(createOfflineFetch());
    const recorder = createModelClient({ apiKey: "sk-ant-secret", fetch: recording.fetch, model: "claude-sonnet-5-5", maxRetries: 0 });
    // Recorded on a database of its own, replayed on this test's (which has seen nothing of it).
    const recorded = await createHarness({ specialists: true });
    const original = await playScenario(recorded.newDeps("recorder", recorder), scenario).finally(() => recording.settled());
    const fixture = fixtureFrom(recording.exchanges, {
      header: {
        scenario: scenario.name,
        source: "recorded",
        note: "round trip",
        model: "claude-sonnet-5-5",
        sdk: "test",
        recordedAt: "test",
      },
      sensitive: await sensitiveValues(recorded.db),
    });
    await recorded.close();
    const text = JSON.stringify(fixture);
    expect(text).not.toMatch(/sk-ant-secret|dana@example\.com|Dana/);
    expect(text).toContain("«email-1»");

    const { replay, deps } = replayDeps(fixture, 0);
    const replayed = await playScenario(deps, scenario);
    replay.assertDone();
    expect(replayed.replies).toEqual(original.replies);
    expect((await h.effects()).map((e) => e.toolName)).toEqual(["refund_order"]);
  });
});
