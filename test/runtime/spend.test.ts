import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEMO_POLICY_RULES } from "@/lib/setup/seed";
import { createModelClient } from "@/lib/model/client";
import { createOfflineFetch } from "@/lib/model/offline";
import { say } from "@/lib/operator/commands";
import type { PolicyRulesInput } from "@/lib/policy/policy";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { createHarness, type Harness } from "../runtime-harness";

// Model spend budgets in USD (per run, per conversation, per shop per day), from the usage the API reports: hitting
// one hands the conversation to a person with a polite notice — and the model is not called again.
let h: Harness;
let priced: RuntimeDeps;
beforeEach(async () => {
  h = await createHarness();
  // The offline model, but answering as a priced Claude model: its usage costs money.
  priced = h.newDeps(
    "priced",
    createModelClient({ fetch: createOfflineFetch({ script: h.script }), model: "claude-sonnet-5-5", maxRetries: 0 }),
  );
});
afterEach(async () => {
  await h.close();
});

const text = (t: string) => ({ type: "text" as const, text: t });
const use = (name: string, input: unknown) => ({ type: "tool_use" as const, name, input });
const reply = (stop_reason: string, ...content: Array<ReturnType<typeof text> | ReturnType<typeof use>>) => ({
  reply: { content, stop_reason },
});

async function publish(change: (rules: PolicyRulesInput) => PolicyRulesInput) {
  const tenant = await h.db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  // Policy versions are immutable and cached by (tenant, version); every test database is a copy of one template
  // (same tenant ids), so each test publishes a version number of its own.
  const version = tenant.policyVersion + 1 + Math.floor(Math.random() * 1_000_000);
  const rules = change(structuredClone(DEMO_POLICY_RULES) as unknown as PolicyRulesInput);
  await h.db.policyVersion.create({ data: { tenantId: tenant.id, version, rules: rules as object } });
  await h.db.tenant.update({ where: { id: tenant.id }, data: { policyVersion: version } });
}
const ask = (text: string, conversationId?: string) =>
  say(priced, { tenant: "acme", text, conversationId, customerEmail: conversationId ? undefined : "dana@example.com" });

describe("model spend budgets", () => {
  it("per run: past it, the run is handed to a person before another model call", async () => {
    await publish((r) => ({ ...r, budgets: { ...r.budgets, maxRunCostMicros: 1 } }));
    h.script.push(reply("tool_use", use("lookup_order", { order_number: "A-1001" })), reply("end_turn", text("never sent")));
    const out = await ask("where is A-1001?");
    expect(out.phase).toBe("ESCALATED");
    expect(h.script.requests).toHaveLength(1); // the second turn was never asked for
    const run = await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } });
    expect(run.costMicros).toBeGreaterThan(0);
    expect(run.outcome).toMatch(/budget: The run spent its model budget/);
    expect(out.replies.map((r) => r.text).join(" ")).toMatch(/passed your conversation to our team/);
    const calls = await h.db.modelCall.findMany({ where: { runId: out.runId! } });
    expect(calls[0]!.costMicros).toBe(run.costMicros);
  });

  it("per conversation: the next message's run is handed over without calling the model", async () => {
    await publish((r) => ({ ...r, budgets: { ...r.budgets, maxConversationCostMicros: 1 } }));
    h.script.push(reply("end_turn", text("Hello!")));
    const first = await ask("hello");
    expect(first.phase).toBe("COMPLETED");
    const requests = h.script.requests.length;
    const second = await ask("and again", first.conversationId);
    expect(second.phase).toBe("ESCALATED");
    expect(h.script.requests).toHaveLength(requests);
    const run = await h.db.run.findUniqueOrThrow({ where: { id: second.runId! } });
    expect(run.outcome).toMatch(/conversation spent its model budget/);
  });

  it("per shop per day: counted across conversations in a sharded counter; past it nobody's run calls the model", async () => {
    await publish((r) => ({ ...r, budgets: { ...r.budgets, maxShopDailyCostMicros: 1 } }));
    h.script.push(reply("end_turn", text("Hi.")));
    expect((await ask("hi")).phase).toBe("COMPLETED");
    const spend = await h.db.tenantSpend.findMany();
    expect(spend.reduce((sum, s) => sum + Number(s.costMicros), 0)).toBeGreaterThan(0);
    const requests = h.script.requests.length;
    const other = await say(priced, { tenant: "acme", text: "hello", customerEmail: "sam@example.com" });
    expect(other.phase).toBe("ESCALATED");
    expect(h.script.requests).toHaveLength(requests);
  });

  it("the offline model is free: no spend rows are written", async () => {
    h.script.push(reply("end_turn", text("Hi.")));
    await h.say("hi");
    expect(await h.db.tenantSpend.count()).toBe(0);
  });
});

describe("a budget that runs out after an approved action ran", () => {
  it("the customer is told what was done, not only that it could not be finished", async () => {
    // Two model turns per run: the refund is proposed (turn 1), approved, run, and then the budget is gone.
    await publish((r) => ({ ...r, budgets: { ...r.budgets, maxTurns: 1 } }));
    h.script.push(reply("tool_use", use("refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" })));
    const out = await h.say("refund A-1002", { customer: "dana@example.com" });
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    const decided = await h.decide(out.handoffs[0]!.id, "raj@acme.test", "approve");
    expect(decided.phase).toBe("ESCALATED");
    expect(await h.effects()).toHaveLength(1);
    const notice = decided.replies.map((r) => r.text).join(" ");
    expect(notice).toMatch(/Done so far: a refund of \$250\.00 on A-1002/);
    expect(notice).not.toMatch(/^I'm sorry — I couldn't finish this on my own/);
  });
});
