import type { ChildProcess } from "node:child_process";
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SYSTEM, TOOLS } from "@/lib/model/test-fixtures";
import { startOfflineModelServer } from "@/scripts/offline-model-process";

// The offline model behind HTTP (what `npm run bench` and `npm run load` call, as the product calls Claude): a streamed
// answer must arrive over time, piece by piece, not all at once when the model has finished writing — or the
// process reading it does its streaming work in one go, and the load measures something Claude never sends.
const PACE_MS = 40;
let server: ChildProcess;
let port = 0;

beforeAll(async () => {
  const started = startOfflineModelServer({ env: { ...process.env, SUPPORT_OFFLINE_STREAM_PACE_MS: String(PACE_MS) } });
  server = started.child;
  port = await started.port;
}, 30_000);
afterAll(() => {
  server.stdin?.end();
  server.kill();
});

describe("scripts/offline-model-server", () => {
  it("streams each piece of text as it is written, through the real SDK", async () => {
    const client = new Anthropic({ apiKey: "offline-model-server", baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const arrived: number[] = [];
    const stream = client.messages.stream({
      model: "claude-sonnet-4-5",
      max_tokens: 1024,
      system: SYSTEM,
      tools: TOOLS,
      messages: [{ role: "user", content: "hi, what can you do for me?" }],
    });
    stream.on("text", () => arrived.push(performance.now()));
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe("end_turn");
    expect(arrived.length).toBeGreaterThanOrEqual(3);
    // Paced PACE_MS apart at the source: received apart too (all at once, the spread would be a millisecond or two).
    const spread = arrived.at(-1)! - arrived[0]!;
    expect(spread).toBeGreaterThanOrEqual(PACE_MS * (arrived.length - 1) * 0.5);
  });
});
