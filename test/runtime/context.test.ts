// Conversations of any length at a flat cost (issue 10.3): every request stays under the context budget, older
// messages travel as a rolling summary written from the records, every tool_use/tool_result pair sent is whole, and
// customer text queued while the model was busy is bundled only within the budget.
import type Anthropic from "@anthropic-ai/sdk";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { requestTokens } from "@/lib/model/offline/usage";
import type { OfflineRequest, OfflineStep } from "@/lib/model/offline/types";
import { transcriptViolations } from "@/lib/store/transcript";
import { issueApiToken } from "@/lib/api/tokens";
import { harnessApiClient } from "../api/api-client";
import { createHarness, type Harness } from "../runtime-harness";

// The system prompt and tools take about 2,800 of these; the conversation gets the rest.
const BUDGET = 6000;
let before: string | undefined;
beforeAll(() => {
  before = process.env.SUPPORT_CONTEXT_BUDGET_TOKENS;
  process.env.SUPPORT_CONTEXT_BUDGET_TOKENS = String(BUDGET);
});
afterAll(() => {
  if (before === undefined) delete process.env.SUPPORT_CONTEXT_BUDGET_TOKENS;
  else process.env.SUPPORT_CONTEXT_BUDGET_TOKENS = before;
});

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const orders = ["A-1001", "A-1002", "A-1003", "A-1004"];
const lookupThenReply = (order: string, i: number): OfflineStep[] => [
  { reply: { content: [{ type: "tool_use", name: "lookup_order", input: { order_number: order } }], stop_reason: "tool_use" } },
  { reply: { content: [{ type: "text", text: `Order ${order} is on record (reply ${i}). Anything else?` }], stop_reason: "end_turn" } },
];

/** What is wrong with a request as sent: over the budget, a broken pair, or a verbatim part that starts mid-pair. */
function problemsOf(req: OfflineRequest): string[] {
  const problems = transcriptViolations(req.messages as Anthropic.MessageParam[]);
  const tokens = requestTokens(req);
  if (tokens > BUDGET) problems.push(`${tokens} tokens, over the budget of ${BUDGET}`);
  const first = req.messages[0]?.content;
  if (Array.isArray(first) && first.some((b) => b.type === "tool_result")) problems.push("starts with a tool_result whose call was cut");
  return problems;
}

/** Thirty questions, each answered after a look-up of one of three orders: enough to push early lines out of a summary. */
async function thirtyLookUps(conversationId: string) {
  for (let i = 0; i < 30; i++) {
    const order = orders[(i % 3) + 1]!;
    h.script.push(...lookupThenReply(order, i));
    await h.say(`Question ${i} about ${order}: ${"tell me everything you know about it. ".repeat(3)}`, { conversationId });
  }
}

const firstText = (req: OfflineRequest) => {
  const first = req.messages[0]?.content;
  return Array.isArray(first) && first[0]?.type === "text" ? String((first[0] as { text: string }).text) : "";
};

describe("a long conversation", () => {
  it("stays under the budget at every request, pairs whole, with a rolling summary — and never hands off", async () => {
    const start = await h.say("hello", { customer: "dana@example.com" });
    const conversationId = start.conversationId;
    const sizes: number[] = [];
    for (let i = 0; i < 50; i++) {
      const order = orders[i % orders.length]!;
      h.script.push(...lookupThenReply(order, i));
      const out = await h.say(`Message ${i}: where is my order ${order}? ${"I am asking again because I want to be sure. ".repeat(2)}`, {
        conversationId,
      });
      expect(out.phase, `message ${i}`).toBe("COMPLETED");
      for (const req of h.script.requests.splice(0)) {
        expect(problemsOf(req), `message ${i}`).toEqual([]);
        sizes.push(requestTokens(req));
      }
    }
    expect(await h.pendingHandoffs()).toHaveLength(0);
    expect(await h.transcriptProblems(conversationId)).toEqual([]);

    // Flat: the last requests are no larger than the budget allows, though the transcript is many budgets long.
    const transcriptTokens = (await h.db.message.findMany({ where: { conversationId, inTranscript: true } })).reduce(
      (n, m) => n + JSON.stringify(m.content).length / 4,
      0,
    );
    expect(transcriptTokens).toBeGreaterThan(BUDGET * 2);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(BUDGET);

    // Summaries were written from the records and are what late requests start with.
    const summaries = await h.db.contextSummary.findMany({ where: { conversationId }, orderBy: { throughSeq: "asc" } });
    expect(summaries.length).toBeGreaterThan(1);
    const calls = await h.db.modelCall.findMany({ where: { run: { conversationId } }, orderBy: { createdAt: "asc" } });
    const last = calls[calls.length - 1]!;
    expect(last.contextSummaryId).toBe(summaries[summaries.length - 1]!.id);
    expect(last.contextFromSeq).toBeGreaterThan(summaries[summaries.length - 1]!.throughSeq);
    expect(last.requestTokens).toBeLessThanOrEqual(BUDGET);
  }, 300_000);

  it("the summary remembers what was done, from the records: a refund made early is still known late", async () => {
    h.script.push(
      { parallel: [{ id: "r1", name: "refund_order", input: { order_number: "A-1001", amount_cents: 4250, reason: "zip broke" } }] },
      { reply: { content: [{ type: "text", text: "Your refund of $42.50 on A-1001 has been issued." }], stop_reason: "end_turn" } },
    );
    const start = await h.say("Refund $42.50 on A-1001, the zip broke.", { customer: "dana@example.com" });
    expect(start.phase).toBe("COMPLETED");
    await thirtyLookUps(start.conversationId);
    const late = h.script.requests[h.script.requests.length - 1]!;
    expect(firstText(late)).toMatch(/^<support_note>|Summary of the/);
    const summary = JSON.stringify(late.messages[0]);
    expect(summary).toContain("refund_order");
    expect(summary).toContain("A-1001");
    expect(problemsOf(late)).toEqual([]);
  }, 300_000);

  it("the summary keeps who verify_customer verified the customer as, however many look-ups follow", async () => {
    h.script.push(
      { parallel: [{ id: "v1", name: "verify_customer", input: { email: "dana@example.com", order_number: "A-1001" } }] },
      { reply: { content: [{ type: "text", text: "Thanks, Dana — you're verified. How can I help?" }], stop_reason: "end_turn" } },
    );
    const start = await h.say("Hi, I'm dana@example.com, order A-1001.");
    expect(start.phase).toBe("COMPLETED");
    // Look-ups are listed within a cap, oldest dropped first: the verification's line leaves that list long before the
    // end, while the gates still treat the customer as verified — the model must still be told so.
    await thirtyLookUps(start.conversationId);
    const conv = await h.db.conversation.findUniqueOrThrow({ where: { id: start.conversationId } });
    expect(conv.verifiedCustomerId).not.toBeNull();
    const late = h.script.requests[h.script.requests.length - 1]!;
    expect(firstText(late)).toMatch(/Summary of the/);
    const sent = JSON.stringify(late.messages);
    expect(sent).not.toContain('verify_customer {\\"email'); // its look-up line was trimmed…
    expect(firstText(late)).toMatch(/verified by verify_customer as: .*dana@example\.com/); // …the fact was not
    expect(firstText(late)).toContain(conv.verifiedCustomerId!);
    expect(problemsOf(late)).toEqual([]);
  }, 300_000);
});

// A request's messages without the prompt-cache breakpoints the model client adds as it sends them (lib/model).
const messagesOf = (req: OfflineRequest) => JSON.parse(JSON.stringify(req.messages, (k, v) => (k === "cache_control" ? undefined : v)));

describe("the supervisor's view of a long conversation", () => {
  it("runDetail's messages are the last request as sent after a cut: the summary, then the messages after it", async () => {
    const start = await h.say("hello", { customer: "dana@example.com" });
    const conversationId = start.conversationId;
    let runId = start.runId!;
    const plain = await h.runDetail(runId);
    // Before any cut the request is the whole transcript.
    expect(plain.messages).toEqual(messagesOf(h.script.requests[h.script.requests.length - 1]!));
    for (let i = 0; i < 40; i++) {
      const order = orders[i % orders.length]!;
      h.script.push(...lookupThenReply(order, i));
      const out = await h.say(`Message ${i}: where is my order ${order}? ${"I am asking again because I want to be sure. ".repeat(2)}`, {
        conversationId,
      });
      expect(out.phase, `message ${i}`).toBe("COMPLETED");
      runId = out.runId!;
      if (await h.db.modelCall.count({ where: { runId, contextSummaryId: { not: null } } })) break;
    }
    const calls = await h.db.modelCall.findMany({ where: { runId }, orderBy: { createdAt: "asc" } });
    expect(calls[calls.length - 1]!.contextSummaryId).not.toBeNull();
    const lastRequest = h.script.requests[h.script.requests.length - 1]!;
    expect(firstText(lastRequest)).toMatch(/Summary of the/);
    // What the supervisor is shown as the run's last request is that request, not the whole transcript.
    const detail = await h.runDetail(runId);
    expect(detail.messages).toEqual(messagesOf(lastRequest));
    expect(detail.transcript.length).toBeGreaterThan(detail.messages.length);
    // An integrator reading the run through the API is told which part each request carried.
    const token = await issueApiToken(h.db, {
      tenantId: h.acme.id,
      name: "inspector",
      scopes: ["runs:read"],
      issuedBy: { operator: true },
    });
    const api = await harnessApiClient(h)("GET", `/runs/${runId}`, { token: token.token });
    expect(api.status).toBe(200);
    const last = calls[calls.length - 1]!;
    expect(api.body.modelCalls.at(-1)).toMatchObject({
      id: last.id,
      scope: null,
      throughSeq: last.throughSeq,
      contextFromSeq: last.contextFromSeq,
      contextSummaryId: last.contextSummaryId,
      costMicros: last.costMicros,
    });
    expect(last.contextFromSeq).toBeGreaterThan(1);
  }, 300_000);
});

describe("customer text queued while the model was busy", () => {
  it("is bundled into one turn only within the budget; the rest follows in later turns, none lost", async () => {
    // A refund over the automatic limit parks the run; meanwhile the customer writes 12 long messages.
    const parked = await h.say("Please refund $250.00 on A-1002, it arrived broken.", { customer: "dana@example.com" });
    expect(parked.phase).toBe("WAITING_FOR_APPROVAL");
    const long = (i: number) => `Long message ${i}: ${"the box was crushed and the lamp inside is in pieces. ".repeat(75)}`.slice(0, 4000);
    for (let i = 0; i < 12; i++) {
      const more = await h.say(long(i), { conversationId: parked.conversationId });
      expect(more.queued).toBe(true);
    }
    h.script.requests.splice(0);
    const [handoff] = await h.pendingHandoffs();
    const decided = await h.decide(handoff!.id, "raj@acme.test", "approve");
    expect(decided.outcome).toBe("approved");
    // The worker finishes the follow-up runs the queued text started.
    for (let i = 0; i < 40; i++) {
      const next = await h.db.conversation.findUniqueOrThrow({ where: { id: parked.conversationId } });
      if (!next.activeRunId) break;
      await (await import("@/lib/runtime/advance")).advanceConversationFrom(h.deps, next.activeRunId);
    }
    expect(h.script.requests.length).toBeGreaterThan(1);
    for (const req of h.script.requests) expect(problemsOf(req)).toEqual([]);
    const waiting = await h.db.message.count({ where: { conversationId: parked.conversationId, pendingDelivery: true } });
    expect(waiting).toBe(0);
    // Every long message reached the model exactly once.
    const delivered = h.script.requests.flatMap((r) =>
      r.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === "text"),
    );
    for (let i = 0; i < 12; i++)
      expect(
        delivered.some((b) => String((b as { text: string }).text).includes(`Long message ${i}:`)),
        `message ${i}`,
      ).toBe(true);
    expect(await h.effects()).toHaveLength(1);
  }, 300_000);
});
