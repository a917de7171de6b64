import { describe, expect, it } from "vitest";
import type { Harness } from "../runtime-harness";
import { harnessPerTest } from "./harness-per-test";
import { runWorkerOnce } from "@/lib/runtime/worker";

let h: Harness;
harnessPerTest((harness) => (h = harness));

const text = (t: string) => ({ type: "text" as const, text: t });
const reply = (
  stop_reason: string,
  ...content: Array<{ type: "text"; text: string } | { type: "tool_use"; name: string; input: unknown; id?: string }>
) => ({ reply: { content, stop_reason } });
const lookup = (id: string, order: string) => ({ type: "tool_use" as const, id, name: "lookup_order", input: { order_number: order } });
const DANA = { customer: "dana@example.com" };

async function runOf(out: { runId: string | null }) {
  return h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
}
async function escalations(conversationId: string) {
  return h.db.handoff.findMany({ where: { conversationId, kind: "ESCALATION" } });
}

describe("every stop_reason", () => {
  it("end_turn is the only success: the reply is shown and the run completes", async () => {
    h.script.push(reply("end_turn", text("Hello! How can I help?")));
    const out = await h.say("hi");
    expect(out.phase).toBe("COMPLETED");
    expect(out.replies.map((r) => r.text)).toEqual(["Hello! How can I help?"]);
  });

  it("stop_sequence is not success: the product sets none, so a reply cut at one is never shown and a person takes over", async () => {
    h.script.push(reply("stop_sequence", text("Done here. I have refunded")));
    const out = await h.say("hi");
    expect(out.phase).toBe("ESCALATED");
    expect(out.replies.map((r) => r.text).join(" ")).not.toContain("Done here");
    expect(out.handoffs.map((x) => x.kind)).toEqual(["ESCALATION"]);
  });

  it("tool_use: the call runs, its result goes back in one user message, then end_turn", async () => {
    h.script.push(
      reply("tool_use", { type: "tool_use", id: "toolu_a", name: "lookup_order", input: { order_number: "A-1001" } }),
      reply("end_turn", text("A-1001 was delivered.")),
    );
    const out = await h.say("where is A-1001?", DANA);
    expect(out.phase).toBe("COMPLETED");
    const second = h.script.requests[1]!;
    const results = second.messages[second.messages.length - 1]!.content as Array<{ type: string; tool_use_id?: string; content?: string }>;
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ type: "tool_result", tool_use_id: "toolu_a" });
    expect(JSON.parse(results[0]!.content!)).toMatchObject({ order_number: "A-1001", status: "delivered" });
  });

  it("max_tokens is never an answer: retried once with a larger limit", async () => {
    h.script.push(reply("max_tokens", text("Your order A-1001 was deliv")), reply("end_turn", text("Your order A-1001 was delivered.")));
    const out = await h.say("where is A-1001?", DANA);
    expect(out.replies.map((r) => r.text)).toEqual(["Your order A-1001 was delivered."]);
    expect(h.script.requests[1]!.max_tokens).toBeGreaterThan(h.script.requests[0]!.max_tokens);
    const run = await runOf(out);
    expect(run.maxTokensRetries).toBe(1);
  });

  it("a tool_use cut by max_tokens is never executed; cut twice → handed off honestly", async () => {
    h.script.push(
      { cutToolUse: true, name: "refund_order", input: { order_number: "A-1001", amount_cents: 4250, reason: "damaged" } },
      { cutToolUse: true, name: "refund_order", input: { order_number: "A-1001", amount_cents: 4250, reason: "damaged" } },
    );
    const out = await h.say("refund A-1001 please", DANA);
    expect(out.phase).toBe("ESCALATED");
    expect(await h.db.toolCall.count()).toBe(0);
    expect(await h.effects()).toHaveLength(0);
    expect(out.replies.map((r) => r.text).join(" ")).toMatch(/passed your conversation to our team/);
    expect(await escalations(out.conversationId)).toHaveLength(1);
  });

  it("pause_turn sends the conversation back as it is, bounded", async () => {
    h.script.push(reply("pause_turn", text("Let me check…")), reply("end_turn", text("All good.")));
    const out = await h.say("hi");
    expect(out.phase).toBe("COMPLETED");
    const second = h.script.requests[1]!;
    expect(second.messages[second.messages.length - 1]).toMatchObject({
      role: "assistant",
      content: [{ type: "text", text: "Let me check…" }],
    });
    expect(out.replies.map((r) => r.text)).toEqual(["All good."]);

    h.script.push(...Array.from({ length: 5 }, () => reply("pause_turn", text("…"))));
    const looping = await h.say("again", { conversationId: out.conversationId });
    expect(looping.phase).toBe("ESCALATED");
  });

  it("pause_turn carrying a tool call of ours is handed off, and no tool_use is stored that nothing would answer", async () => {
    // pause_turn is for the provider's own tools: the run never reaches a tool step for this call, so a stored
    // tool_use would stay unanswered and every later request of the conversation would be refused.
    h.script.push(reply("pause_turn", text("Let me look."), lookup("toolu_p", "A-1001")));
    const out = await h.say("where is A-1001?", DANA);
    expect(out.phase).toBe("ESCALATED");
    expect(await h.db.toolCall.count()).toBe(0);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
    h.script.push(reply("end_turn", text("Hi again.")));
    const next = await h.say("hello?", { conversationId: out.conversationId });
    expect(next.replies.map((r) => r.text)).toContain("Hi again.");
    expect(await h.badRequests(out.conversationId)).toEqual([]);
  });

  it("refusal is never shown as success: a safe reply and a handoff", async () => {
    h.script.push(reply("refusal", text("I can't help with")));
    const out = await h.say("something odd");
    expect(out.phase).toBe("ESCALATED");
    expect(out.replies.map((r) => r.text).join(" ")).not.toContain("I can't help with");
    expect(out.replies.map((r) => r.text).join(" ")).toMatch(/member of our team/);
    const [esc] = await escalations(out.conversationId);
    expect(esc!.payload).toMatchObject({ trigger: "refusal" });
  });

  it("model_context_window_exceeded hands off", async () => {
    h.script.push(reply("model_context_window_exceeded", text("")));
    const out = await h.say("hi");
    expect(out.phase).toBe("ESCALATED");
  });

  it("an unknown stop_reason is suspicious: handed off, its text never shown", async () => {
    h.script.push(reply("weird_new_reason", text("Refund done!")));
    const out = await h.say("hi");
    expect(out.phase).toBe("ESCALATED");
    expect(out.replies.map((r) => r.text).join(" ")).not.toContain("Refund done!");
    const run = await runOf(out);
    expect(run.outcome).toMatch(/unknown/);
  });

  it("tool_use without a tool_use block is handed off", async () => {
    h.script.push(reply("tool_use", text("I will call a tool")));
    const out = await h.say("hi");
    expect(out.phase).toBe("ESCALATED");
  });
});

describe("model faults", () => {
  it("429 and 529 wait for a retry with backoff, then the worker finishes the run", async () => {
    h.script.push({ http: 429 }, { http: 529 });
    const out = await h.say("hi");
    expect(out.phase).toBe("WAITING_FOR_RETRY");
    let run = await runOf(out);
    expect(run.requestAttempts).toBe(1);
    expect(run.nextAttemptAt).not.toBeNull();
    await new Promise((r) => setTimeout(r, 20));
    await runWorkerOnce(h.deps);
    run = await runOf(out);
    expect(run.phase).toBe("WAITING_FOR_RETRY");
    expect(run.requestAttempts).toBe(2);
    await new Promise((r) => setTimeout(r, 20));
    await runWorkerOnce(h.deps);
    run = await runOf(out);
    expect(run.phase).toBe("COMPLETED");
    expect(run.requestAttempts).toBe(0);
    const calls = await h.db.modelCall.findMany({ where: { runId: run.id }, orderBy: { createdAt: "asc" } });
    expect(calls.map((c) => c.error?.split(":")[0] ?? c.stopReason)).toEqual(["rate_limit", "overloaded", "end_turn"]);
  });

  it("a timeout is retried too", async () => {
    h.script.push({ timeout: true });
    const out = await h.say("hi");
    expect(out.phase).toBe("WAITING_FOR_RETRY");
    const [call] = await h.db.modelCall.findMany({ where: { runId: out.runId! } });
    expect(call!.error).toMatch(/^timeout/);
  });

  it("exhausted request attempts → dead letter, an escalation and an honest message", async () => {
    h.script.push({ http: 500 }, { http: 500 }, { http: 500 }, { http: 500 });
    const out = await h.say("hi");
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 20));
      await runWorkerOnce(h.deps);
    }
    const run = await runOf(out);
    expect(run.phase).toBe("DEAD_LETTER");
    expect(await escalations(out.conversationId)).toHaveLength(1);
    const notices = await h.db.message.findMany({
      where: { conversationId: out.conversationId, author: "HARNESS", shownToCustomer: true },
    });
    expect(notices.map((n) => n.displayText).join(" ")).toMatch(/a person will follow up/);
  });

  it("a 400 from the provider is not retried", async () => {
    h.script.push({ http: 400 });
    const out = await h.say("hi");
    expect(out.phase).toBe("DEAD_LETTER");
  });

  it("a request that fails while the previous step still commits is handled, never an unhandled rejection", async () => {
    // The next request goes out before a read-only call's step has committed; the standalone worker installs no
    // unhandledRejection handler, so a rejection nobody listens to yet could end the process.
    const unhandled: unknown[] = [];
    const note = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", note);
    try {
      h.script.push(reply("tool_use", lookup("toolu_a", "A-1001")), { http: 400, message: "invalid request" });
      const out = await h.say("where is A-1001?", DANA);
      expect(out.phase).toBe("DEAD_LETTER");
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      process.off("unhandledRejection", note);
    }
    expect(unhandled).toEqual([]);
  });
});

describe("tool calls", () => {
  it("parallel calls: allowed ones run now and exactly once, the parked one waits, one user message carries all results", async () => {
    h.script.push({
      parallel: [
        { id: "toolu_1", name: "lookup_order", input: { order_number: "A-1001" } },
        { id: "toolu_2", name: "refund_order", input: { order_number: "A-1002", amount_cents: 25000, reason: "damaged" } },
        { id: "toolu_3", name: "lookup_order", input: { order_number: "A-1003" } },
      ],
    });
    const out = await h.say("where are A-1001 and A-1003, and refund A-1002 (damaged)", DANA);
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId! }, orderBy: { position: "asc" } });
    expect(calls.map((c) => [c.toolUseId, c.status, c.attempts])).toEqual([
      ["toolu_1", "SUCCEEDED", 1],
      ["toolu_2", "PARKED", 0],
      ["toolu_3", "SUCCEEDED", 1],
    ]);
    const requests = h.script.requests.length;
    h.script.push(reply("end_turn", text("A-1001 delivered, A-1003 lost, and your A-1002 refund of $250.00 is done.")));
    await h.decide(out.handoffs[0]!.id, "raj@acme.test", "approve");
    const after = await h.db.toolCall.findMany({ where: { runId: out.runId! }, orderBy: { position: "asc" } });
    expect(after.map((c) => c.attempts)).toEqual([1, 1, 1]); // the lookups did not run again
    const resumed = h.script.requests[requests]!;
    const results = resumed.messages[resumed.messages.length - 1]!.content as Array<{ type: string; tool_use_id: string }>;
    expect(results.map((r) => r.tool_use_id)).toEqual(["toolu_1", "toolu_2", "toolu_3"]);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("an identical call twice in a row is denied with a reason the model can act on", async () => {
    h.script.push(
      reply("tool_use", { type: "tool_use", id: "toolu_x", name: "lookup_order", input: { order_number: "A-1001" } }),
      reply("tool_use", { type: "tool_use", id: "toolu_y", name: "lookup_order", input: { order_number: "A-1001" } }),
      reply("end_turn", text("A-1001 was delivered.")),
    );
    const out = await h.say("where is A-1001", DANA);
    const second = await h.db.toolCall.findFirstOrThrow({ where: { toolUseId: "toolu_y" } });
    expect(second).toMatchObject({ status: "DENIED", isError: true, attempts: 0 });
    expect(second.gateReason).toMatch(/identical_call/);
    expect(out.phase).toBe("COMPLETED");
  });

  it("account actions before verification are denied recoverably (call verify_customer first)", async () => {
    h.script.push(
      reply("tool_use", { type: "tool_use", id: "toolu_v", name: "lookup_order", input: { order_number: "A-1001" } }),
      reply("end_turn", text("Please tell me your email and an order number.")),
    );
    await h.say("where is A-1001");
    const call = await h.db.toolCall.findFirstOrThrow({ where: { toolUseId: "toolu_v" } });
    expect(call.result).toMatchObject({ error_category: "permission", is_retryable: true });
    expect((call.result as { message: string }).message).toMatch(/verify_customer first/);
  });

  it("unknown tools and invalid arguments come back as structured errors, never executed", async () => {
    h.script.push(
      {
        parallel: [
          { id: "toolu_u", name: "drop_tables", input: {} },
          { id: "toolu_i", name: "refund_order", input: { order_number: "A-1001", amount_cents: -5, reason: "" } },
        ],
      },
      reply("end_turn", text("Sorry, I can't do that.")),
    );
    const out = await h.say("do it", DANA);
    expect(out.phase).toBe("COMPLETED");
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId! }, orderBy: { position: "asc" } });
    expect(calls.map((c) => [c.status, (c.result as { error_category: string }).error_category])).toEqual([
      ["DENIED", "permission"],
      ["DENIED", "business_rule"],
    ]);
    expect(await h.effects()).toHaveLength(0);
  });

  it("a refund above the ceiling is denied and the escalation is opened by code", async () => {
    h.script.push(
      reply("tool_use", {
        type: "tool_use",
        id: "toolu_big",
        name: "refund_order",
        input: { order_number: "A-1003", amount_cents: 82000, reason: "lost" },
      }),
      reply("end_turn", text("A person will review this.")),
    );
    const out = await h.say("refund my lost A-1003", DANA);
    const call = await h.db.toolCall.findFirstOrThrow({ where: { toolUseId: "toolu_big" } });
    expect(call.result).toMatchObject({ escalated: true, is_retryable: false });
    const [esc] = await escalations(out.conversationId);
    expect(esc).toMatchObject({ amountCents: 82000 });
    expect(esc!.payload).toMatchObject({ trigger: "policy_ceiling" });
  });
});

describe("the stop check and guards", () => {
  it("a reply that claims a refund nobody made goes back to the model and is never shown", async () => {
    h.script.push(reply("end_turn", text("I've refunded $250.00 for A-1002.")));
    const out = await h.say("my A-1002 arrived damaged", DANA);
    const shown = out.replies.map((r) => r.text).join(" ");
    expect(shown).not.toContain("I've refunded $250.00");
    const correction = h.script.requests[1]!;
    expect(JSON.stringify(correction.messages[correction.messages.length - 1])).toContain("<support_note>stop-check:");
    const run = await runOf(out);
    expect(run.corrections).toBe(1);
  });

  it("an empty or blank reply goes back to the model as a correction, and the conversation carries on", async () => {
    // Stored as it came, an empty assistant message (or a blank text block) makes every later request of the
    // conversation invalid: the provider refuses it, and each run dead-letters.
    h.script.push(reply("end_turn"), reply("end_turn", text(" \n")), reply("end_turn", text("Hello! How can I help?")));
    const out = await h.say("hi");
    expect(out.phase).toBe("COMPLETED");
    expect(out.replies.map((r) => r.text)).toEqual(["Hello! How can I help?"]);
    const correction = h.script.requests[1]!;
    expect(JSON.stringify(correction.messages[correction.messages.length - 1])).toContain("Your reply was empty");
    h.script.push(reply("end_turn", text("Hello again.")));
    const next = await h.say("hello?", { conversationId: out.conversationId });
    expect(next.replies.map((r) => r.text)).toEqual(["Hello again."]);
    expect(await h.badRequests(out.conversationId)).toEqual([]);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("a reply that keeps claiming a false effect is handed off after the bounded corrections", async () => {
    h.script.push(...Array.from({ length: 3 }, () => reply("end_turn", text("Your order has been cancelled."))));
    const out = await h.say("hello", DANA);
    expect(out.phase).toBe("ESCALATED");
    expect(out.replies.map((r) => r.text).join(" ")).not.toMatch(/has been cancelled/);
  });

  it("the turn budget is a guard: hitting it hands off honestly", async () => {
    // Policies are versioned, never edited in place: publish v2 with a smaller turn budget.
    const policy = await h.db.policyVersion.findFirstOrThrow({ where: { tenantId: h.acme.id, version: 1 } });
    const rules = policy.rules as { budgets: { maxTurns: number } };
    await h.db.policyVersion.create({
      data: { tenantId: h.acme.id, version: 2, rules: { ...rules, budgets: { ...rules.budgets, maxTurns: 2 } } },
    });
    await h.db.tenant.update({ where: { id: h.acme.id }, data: { policyVersion: 2 } });
    h.script.push(
      reply("tool_use", { type: "tool_use", name: "lookup_order", input: { order_number: "A-1001" } }),
      reply("tool_use", { type: "tool_use", name: "lookup_order", input: { order_number: "A-1002" } }),
    );
    const out = await h.say("where are my orders", DANA);
    expect(out.phase).toBe("ESCALATED");
    expect(h.script.requests).toHaveLength(2);
    const [esc] = await escalations(out.conversationId);
    expect(esc!.payload).toMatchObject({ trigger: "budget" });
    expect(out.replies.map((r) => r.text).join(" ")).toMatch(/couldn't finish this on my own/);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });
});

describe("a deferred call", () => {
  it("waits, is gated again when due, and runs once the condition cleared", async () => {
    process.env.SUPPORT_DEFER_MS = "1";
    const { defaultGates } = await import("@/lib/gates/evaluate");
    let busy = true; // e.g. the order is locked by another operation
    const orderBusy = {
      name: "order_busy",
      check: (i: { toolName: string }) =>
        i.toolName === "lookup_order" && busy ? { decision: "defer" as const, reason: "The order is busy; try again shortly." } : null,
    };
    h.deps.gates = [...defaultGates, orderBusy];
    h.script.push(
      reply("tool_use", { type: "tool_use", id: "toolu_d", name: "lookup_order", input: { order_number: "A-1001" } }),
      reply("end_turn", text("A-1001 was delivered.")),
    );
    const out = await h.say("where is A-1001", DANA);
    expect(out.phase).toBe("WAITING_FOR_RETRY");
    expect(await h.db.toolCall.findFirstOrThrow({ where: { toolUseId: "toolu_d" } })).toMatchObject({ status: "DEFERRED" });
    busy = false;
    await new Promise((r) => setTimeout(r, 20));
    await runWorkerOnce(h.deps);
    expect((await runOf(out)).phase).toBe("COMPLETED");
    const call = await h.db.toolCall.findFirstOrThrow({ where: { toolUseId: "toolu_d" } });
    expect(call).toMatchObject({ status: "SUCCEEDED", attempts: 1 });
    const decisions = await h.db.gateDecision.findMany({ where: { toolUseId: "toolu_d", gate: "order_busy" } });
    expect(decisions).toHaveLength(1); // the defer stays in the audit trail
    delete process.env.SUPPORT_DEFER_MS;
  });
});
