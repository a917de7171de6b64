// The hot path records each step in one statement on the pg pool (lib/db/sql). These are the races and stale
// copies that could make such a statement lose something; each must fall back to the transactional path.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness, statementsSentDuring } from "../runtime-harness";
import { receiveCustomerMessage } from "@/lib/conversations/intake";
import { advanceConversationFrom, claimFor } from "@/lib/runtime/advance";
import type { ModelClient } from "@/lib/model/types";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const text = (t: string) => ({ type: "text" as const, text: t });
const endTurn = (t: string) => ({ reply: { content: [text(t)], stop_reason: "end_turn" } });

/** A model that, on its first request, lets `during` run while it "thinks" (after the runtime's read-ahead). */
function modelWith(during: () => Promise<void>): ModelClient {
  const inner = h.deps.model;
  let first = true;
  return {
    ...inner,
    async send(req, opts) {
      if (first) {
        first = false;
        await new Promise((r) => setTimeout(r, 50));
        await during();
      }
      return inner.send(req, opts);
    },
  };
}

async function sendAndAdvance(conversationId: string, message: string, model: ModelClient) {
  const deps = h.newDeps("fast-path", model);
  const claim = claimFor(deps);
  const intake = await receiveCustomerMessage(h.db, {
    tenantId: h.acme.id,
    conversationId,
    text: message,
    model: model.model,
    claimFor: claim,
  });
  if (intake.kind !== "started") throw new Error(`expected a run, got ${intake.kind}`);
  return { runId: intake.runId, result: await advanceConversationFrom(deps, intake.runId, { claimedAs: claim, run: intake.run }) };
}

async function shownAgentReplies(conversationId: string) {
  const rows = await h.db.message.findMany({ where: { conversationId, author: "AGENT", shownToCustomer: true }, orderBy: { seq: "asc" } });
  return rows.map((m) => m.displayText);
}

describe("the run's end in one statement", () => {
  it("a customer who writes while the model composes its final reply: the reply is shown and the new text answered next", async () => {
    h.script.push(endTurn("Hello! How can I help?"));
    const { conversationId } = await h.say("hi");

    h.script.push(endTurn("Sure, I can help with that."), endTurn("A-1001: let me look into it."));
    const writesMeanwhile = modelWith(async () => {
      const queued = await receiveCustomerMessage(h.db, {
        tenantId: h.acme.id,
        conversationId,
        text: "Also, where is A-1001?",
        model: h.deps.model.model,
      });
      expect(queued.kind).toBe("queued");
    });
    const { runId, result } = await sendAndAdvance(conversationId, "Can you help me with an order?", writesMeanwhile);

    expect(result.phase).toBe("COMPLETED");
    expect(await shownAgentReplies(conversationId)).toEqual([
      "Hello! How can I help?",
      "Sure, I can help with that.",
      "A-1001: let me look into it.",
    ]);
    // The queued text reached the model right after the reply, in the follow-up run it started.
    const lastRequest = JSON.stringify(h.script.requests.at(-1)!.messages.at(-1));
    expect(lastRequest).toContain("Also, where is A-1001?");
    expect(await h.db.message.count({ where: { conversationId, pendingDelivery: true } })).toBe(0);
    const runs = await h.db.run.findMany({ where: { conversationId }, orderBy: { startedAt: "asc" } });
    expect(runs.map((r) => r.phase)).toEqual(["COMPLETED", "COMPLETED", "COMPLETED"]);
    expect(runs[1]!.id).toBe(runId);
    expect((await h.db.conversation.findUniqueOrThrow({ where: { id: conversationId } })).activeRunId).toBeNull();
    expect(await h.transcriptProblems(conversationId)).toEqual([]);
  });

  it("a person who takes over while the model composes its final reply: the reply is kept for the record, never shown", async () => {
    h.script.push(endTurn("Hello! How can I help?"));
    const { conversationId } = await h.say("hi");

    h.script.push(endTurn("Your order is on its way."));
    const takesOver = modelWith(async () => {
      await h.db.conversation.update({ where: { id: conversationId }, data: { status: "human" } });
    });
    const { result } = await sendAndAdvance(conversationId, "Where is my order?", takesOver);

    expect(result.phase).toBe("COMPLETED");
    expect(await shownAgentReplies(conversationId)).toEqual(["Hello! How can I help?"]);
    const kept = await h.db.message.findFirstOrThrow({ where: { conversationId, author: "AGENT" }, orderBy: { seq: "desc" } });
    expect(kept).toMatchObject({ shownToCustomer: false, inTranscript: true });
  });
});

/** How many transactions wrote these messages, and the run's calls (as last written); `same`: all one. */
async function writers(runId: string, messageIds: string[]) {
  const rows = await h.db.$queryRaw<Array<{ kind: string; xid: string }>>`
    SELECT 'message' AS kind, xmin::text AS xid FROM "Message" WHERE id = ANY(${messageIds}::text[])
    UNION ALL SELECT 'call', xmin::text FROM "ToolCall" WHERE "runId" = ${runId}`;
  const of = (kind: string) => new Set(rows.filter((r) => r.kind === kind).map((r) => r.xid));
  return { messages: of("message").size, calls: of("call").size, same: new Set(rows.map((r) => r.xid)).size === 1 };
}

describe("a tool_use turn recorded with what follows it", () => {
  const toolUse = (id: string, name: string, input: unknown) => ({ type: "tool_use" as const, id, name, input });

  it("allowed read-only calls run at once: the turn, the calls with their outcomes and the results are written together", async () => {
    h.script.push(
      {
        reply: {
          content: [toolUse("toolu_r1", "lookup_order", { order_number: "A-1001" }), toolUse("toolu_r2", "list_orders", {})],
          stop_reason: "tool_use",
        },
      },
      endTurn("A-1001 was delivered."),
    );
    const out = await h.say("where is A-1001?", { customer: "dana@example.com" });
    expect(out.phase).toBe("COMPLETED");
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId! }, orderBy: { position: "asc" } });
    expect(calls.map((c) => [c.name, c.status, c.attempts, c.gateDecision])).toEqual([
      ["lookup_order", "SUCCEEDED", 1, "allow"],
      ["list_orders", "SUCCEEDED", 1, "allow"],
    ]);
    expect(await h.db.gateDecision.count({ where: { runId: out.runId!, policyVersion: 1 } })).toBeGreaterThanOrEqual(2);
    // The tool_use message and its results are consecutive, and the results follow the tool_use order.
    const [assistant, results] = await h.db.message.findMany({
      where: { runId: out.runId!, inTranscript: true },
      orderBy: { seq: "asc" },
      skip: 1,
      take: 2,
    });
    expect(results!.seq).toBe(assistant!.seq + 1);
    expect((results!.content as Array<{ tool_use_id: string }>).map((b) => b.tool_use_id)).toEqual(["toolu_r1", "toolu_r2"]);
    expect(calls.every((c) => c.messageSeq === assistant!.seq)).toBe(true);
    // One statement wrote them all: the turn, the calls and the results share the writing transaction.
    expect(await writers(out.runId!, [assistant!.id, results!.id])).toEqual({ messages: 1, calls: 1, same: true });
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("beside a side-effecting call, a read-only call waits for the turn to be recorded; both then run, the effect once", async () => {
    h.script.push(
      {
        reply: {
          content: [
            toolUse("toolu_m1", "lookup_order", { order_number: "A-1001" }),
            toolUse("toolu_m2", "refund_order", { order_number: "A-1001", amount_cents: 1000, reason: "zip broke" }),
          ],
          stop_reason: "tool_use",
        },
      },
      endTurn("I refunded $10.00 on A-1001."),
    );
    const out = await h.say("refund $10 on A-1001, the zip broke", { customer: "dana@example.com" });
    expect(out.phase).toBe("COMPLETED");
    const calls = await h.db.toolCall.findMany({ where: { runId: out.runId! }, orderBy: { position: "asc" } });
    expect(calls.map((c) => [c.name, c.status])).toEqual([
      ["lookup_order", "SUCCEEDED"],
      ["refund_order", "SUCCEEDED"],
    ]);
    expect((await h.effects()).filter((e) => e.toolName === "refund_order")).toHaveLength(1);
    // The turn was recorded before anything ran: its message and the results were written by different commits.
    const [assistant, results] = await h.db.message.findMany({
      where: { runId: out.runId!, inTranscript: true },
      orderBy: { seq: "asc" },
      skip: 1,
      take: 2,
    });
    expect((await writers(out.runId!, [assistant!.id, results!.id])).messages).toBe(2);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });
});

describe("a read-only turn committed while the next request is on its way", () => {
  const toolUse = (id: string, name: string, input: unknown) => ({ type: "tool_use" as const, id, name, input });
  const lookup = (id: string) => ({
    reply: { content: [toolUse(id, "lookup_order", { order_number: "A-1001" })], stop_reason: "tool_use" },
  });

  /** A model that runs `before(n)` as its n-th request (0-based) arrives, before answering it. */
  function modelAround(before: (n: number) => Promise<void>): ModelClient {
    const inner = h.deps.model;
    let n = 0;
    return {
      ...inner,
      async send(req, opts) {
        await before(n++);
        return inner.send(req, opts);
      },
    };
  }

  it("the next request goes out while the turn is still being committed, and its answer is used only after", async () => {
    h.script.push(endTurn("Hello!"));
    const { conversationId } = await h.say("hi");
    h.script.push(lookup("toolu_o1"), endTurn("A-1001 was delivered."));
    // A session holds the conversation's row from the first answer on, so the turn's statement waits for it.
    const pg = (await import("pg")).default;
    const blocker = new pg.Client({ connectionString: h.tdb.url });
    await blocker.connect();
    let resultsWhenAsked: number | null = null;
    const model = modelAround(async (n) => {
      if (n === 0) {
        await blocker.query("BEGIN");
        await blocker.query(`SELECT 1 FROM "Conversation" WHERE id = $1 FOR UPDATE`, [conversationId]);
        setTimeout(() => void blocker.query("COMMIT").catch(() => undefined), 3_000); // the fallback: never a deadlock
      }
      if (n === 1) {
        resultsWhenAsked = await h.db.message.count({ where: { conversationId, role: "user", author: "HARNESS" } });
        await blocker.query("COMMIT").catch(() => undefined);
      }
    });
    try {
      const { runId, result } = await sendAndAdvance(conversationId, "where is A-1001?", model);
      expect(result.phase).toBe("COMPLETED");
      // Asked while the results were not committed yet (the row lock held them back): the commit overlapped the request.
      expect(resultsWhenAsked).toBe(0);
      expect(await shownAgentReplies(conversationId)).toEqual(["Hello!", "A-1001 was delivered."]);
      const calls = await h.db.modelCall.findMany({ where: { runId }, orderBy: { turn: "asc" } });
      const [turn, results] = await h.db.message.findMany({
        where: { runId, role: { in: ["assistant", "user"] }, author: { not: "CUSTOMER" } },
        orderBy: { seq: "asc" },
      });
      // The second call is recorded as having seen the results as committed.
      expect(calls.map((c) => [c.turn, c.error, c.throughSeq])).toEqual([
        [1, null, turn!.seq - 1],
        [2, null, results!.seq],
      ]);
      expect(await h.transcriptProblems(conversationId)).toEqual([]);
    } finally {
      await blocker.end();
    }
  });

  it("customer text that joins the results meanwhile: the answer to the request without it is kept on record, never used, and the turn asked again", async () => {
    h.script.push(endTurn("Hello!"));
    const { conversationId } = await h.say("hi");
    h.script.push(
      lookup("toolu_o2"),
      endTurn("A-1001 was delivered."),
      endTurn("A-1001 was delivered, and I can help with the address too."),
    );
    const model = modelAround(async (n) => {
      if (n !== 0) return;
      const queued = await receiveCustomerMessage(h.db, {
        tenantId: h.acme.id,
        conversationId,
        text: "Also, can I change my address?",
        model: "m",
      });
      expect(queued.kind).toBe("queued");
    });
    const { runId, result } = await sendAndAdvance(conversationId, "where is A-1001?", model);
    expect(result.phase).toBe("COMPLETED");
    const requests = h.script.requests.slice(-3).map((r) => JSON.stringify(r.messages.at(-1)));
    expect(requests[1]).not.toContain("change my address"); // sent before the commit said what the results hold
    expect(requests[2]).toContain("change my address");
    expect(await shownAgentReplies(conversationId)).toEqual(["Hello!", "A-1001 was delivered, and I can help with the address too."]);
    const calls = await h.db.modelCall.findMany({ where: { runId }, orderBy: { turn: "asc" } });
    expect(calls.map((c) => [c.turn, c.error?.split(":")[0] ?? null])).toEqual([
      [1, null],
      [2, "superseded"],
      [3, null],
    ]);
    expect(await h.db.message.count({ where: { conversationId, pendingDelivery: true } })).toBe(0);
    expect(await h.transcriptProblems(conversationId)).toEqual([]);
  });

  it("a lease lost while the turn is committed: the answer that went out meanwhile is never written or shown", async () => {
    h.script.push(endTurn("Hello!"));
    const { conversationId } = await h.say("hi");
    h.script.push(lookup("toolu_o3"), endTurn("A-1001 was delivered."));
    let runId = "";
    const model = modelAround(async (n) => {
      if (n !== 0) return;
      runId = (await h.db.run.findFirstOrThrow({ where: { conversationId, phase: "RUNNING" } })).id;
      await h.db.run.update({ where: { id: runId }, data: { leaseOwner: "another-worker" } }); // taken over meanwhile
    });
    const { result } = await sendAndAdvance(conversationId, "where is A-1001?", model);
    expect(result.phase).toBe("LEASE_LOST");
    expect(await shownAgentReplies(conversationId)).toEqual(["Hello!"]);
    expect(await h.db.toolCall.count({ where: { runId } })).toBe(0);
    expect(await h.db.modelCall.count({ where: { runId } })).toBe(0);
  });
});

describe("intake in one statement", () => {
  it("a policy published after this process cached the old one governs the next run", async () => {
    h.script.push(endTurn("Hello!"));
    const { conversationId } = await h.say("hi"); // this process now knows acme's policy v1

    const v1 = await h.db.policyVersion.findFirstOrThrow({ where: { tenantId: h.acme.id, version: 1 } });
    const rules = v1.rules as { budgets: { maxTurns: number } };
    await h.db.policyVersion.create({
      data: { tenantId: h.acme.id, version: 2, rules: { ...rules, budgets: { ...rules.budgets, maxTurns: 7 } } },
    });
    await h.db.tenant.update({ where: { id: h.acme.id }, data: { policyVersion: 2 } });

    h.script.push(endTurn("Hello again!"));
    const { runId } = await sendAndAdvance(conversationId, "hello again", h.deps.model);
    expect(await h.db.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ policyVersion: 2, maxTurns: 7, phase: "COMPLETED" });
  });

  it("a message to a conversation another tenant owns is refused and writes nothing", async () => {
    h.script.push(endTurn("Hello!"));
    const { conversationId } = await h.say("hi");
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    const before = await h.db.message.count();
    await expect(receiveCustomerMessage(h.db, { tenantId: globex.id, conversationId, text: "hello", model: "m" })).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
    expect(await h.db.message.count()).toBe(before);
    expect(await h.db.run.count({ where: { conversationId } })).toBe(1);
  });
});

describe("the verification the gates judge on", () => {
  const use = (name: string, input: unknown) => ({ type: "tool_use" as const, name, input });
  const toolUse = (...uses: ReturnType<typeof use>[]) => ({ reply: { content: uses, stop_reason: "tool_use" } });

  it("a run's first tool turn is gated on the verification its intake returned: the conversation is not read again", async () => {
    const { conversationId } = await h.say("hi", { customer: "dana@example.com" });
    h.script.push(toolUse(use("lookup_order", { order_number: "A-1002" })), endTurn("A-1002 was delivered."));
    let runId = "";
    const sent = await statementsSentDuring(async () => {
      ({ runId } = await sendAndAdvance(conversationId, "where is A-1002?", h.deps.model));
    });
    expect(sent.filter((t) => /^select "verifiedCustomerId"/i.test(t.trim()))).toEqual([]);
    const call = await h.db.toolCall.findFirstOrThrow({ where: { runId, name: "lookup_order" } });
    expect(call).toMatchObject({ status: "SUCCEEDED", isError: false });
  });

  it("a visitor who verifies in the run and then asks for a refund in it: the gates see who they now are", async () => {
    const { conversationId } = await h.say("hi");
    h.script.push(
      toolUse(use("verify_customer", { email: "dana@example.com", order_number: "A-1002" })),
      toolUse(use("refund_order", { order_number: "A-1002", amount_cents: 4000, reason: "arrived damaged" })),
      endTurn("Refunded $40.00."),
    );
    const { runId, result } = await sendAndAdvance(conversationId, "I'm dana@example.com, A-1002: refund $40 please", h.deps.model);
    expect(result.phase).toBe("COMPLETED");
    const calls = await h.db.toolCall.findMany({ where: { runId }, orderBy: { createdAt: "asc" } });
    expect(calls.map((c) => [c.name, c.status])).toEqual([
      ["verify_customer", "SUCCEEDED"],
      ["refund_order", "SUCCEEDED"],
    ]);
    expect((await h.db.order.findFirstOrThrow({ where: { number: "A-1002" } })).refundedCents).toBe(4000);
  });
});
