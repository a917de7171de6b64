import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import { AppError } from "@/lib/errors";
import { receiveCustomerMessage } from "@/lib/conversations/intake";
import { decideHandoff } from "@/lib/runtime/resume";
import { runDetail } from "@/lib/runs/detail";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

async function code(p: Promise<unknown>) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return (err as AppError).code;
}
const counts = async () => [
  await h.db.message.count(),
  await h.db.run.count(),
  await h.db.conversation.count(),
  await h.db.handoff.count(),
];

describe("bad input gets a clear error and writes nothing", () => {
  it("customer text: wrong types, empty, oversized, another tenant's conversation", async () => {
    const first = await h.say("hi");
    const before = await counts();
    const send = (text: unknown, conversationId = first.conversationId, tenantId = h.acme.id) =>
      receiveCustomerMessage(h.db, { tenantId, conversationId, text, model: "m" });
    expect(await code(send(42))).toBe("INVALID_INPUT");
    expect(await code(send({ text: "hi" }))).toBe("INVALID_INPUT");
    expect(await code(send(null))).toBe("INVALID_INPUT");
    expect(await code(send("   \u0000  "))).toBe("INVALID_INPUT");
    expect(await code(send("x".repeat(4001)))).toBe("INVALID_INPUT");
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    expect(await code(send("hi", first.conversationId, globex.id))).toBe("NOT_FOUND");
    expect(await code(send("hi", "no-such-conversation"))).toBe("NOT_FOUND");
    expect(await counts()).toEqual(before);
  });

  it("decisions: wrong types and forged ids", async () => {
    const out = await h.say("I'm dana@example.com, order A-1002 arrived damaged. Please refund it.");
    const before = await counts();
    const actor = { tenantId: h.acme.id, staffId: h.staff.raj.id };
    const id = out.handoffs[0]!.id;
    expect(await code(decideHandoff(h.db, actor, { handoffId: id, decision: "approve", version: "1" }))).toBe("INVALID_INPUT");
    expect(await code(decideHandoff(h.db, actor, { handoffId: id, decision: "edit", editedInput: "amount=1" }))).toBe("INVALID_INPUT");
    expect(await code(decideHandoff(h.db, actor, { handoffId: 12, decision: "approve" }))).toBe("INVALID_INPUT");
    expect(await code(decideHandoff(h.db, actor, "approve"))).toBe("INVALID_INPUT");
    expect(
      await code(decideHandoff(h.db, { tenantId: h.staff.gus.tenantId, staffId: h.staff.gus.id }, { handoffId: id, decision: "approve" })),
    ).toBe("NOT_FOUND");
    // A reviewer id of another tenant presented with this tenant's id is not staff here.
    expect(await code(decideHandoff(h.db, { tenantId: h.acme.id, staffId: h.staff.gus.id }, { handoffId: id, decision: "approve" }))).toBe(
      "FORBIDDEN",
    );
    expect(await counts()).toEqual(before);
    expect(await h.db.handoff.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: "PENDING", version: 1 });
  });

  it("a run of another tenant is not found", async () => {
    const out = await h.say("hi");
    expect(await code(runDetail(h.db, out.runId!, h.staff.gus.tenantId))).toBe("NOT_FOUND");
    expect((await runDetail(h.db, out.runId!, h.acme.id)).run.id).toBe(out.runId);
  });
});

describe("malformed model output is refused before it runs, never stored for the provider to refuse later", () => {
  const text = (t: string) => ({ type: "text" as const, text: t });
  const lookup = (id: string, order: string) => ({ type: "tool_use" as const, id, name: "lookup_order", input: { order_number: order } });
  const reply = (stop_reason: string, ...content: Array<ReturnType<typeof text> | ReturnType<typeof lookup>>) => ({
    reply: { content, stop_reason },
  });
  const DANA = { customer: "dana@example.com" };

  it("a blank text block beside a tool call is left out of the transcript; the call runs and the run completes", async () => {
    // The provider refuses a request with a whitespace-only text block: stored, it would dead-letter the run.
    h.script.push(reply("tool_use", text("\n\n"), lookup("toolu_ws", "A-1001")), reply("end_turn", text("A-1001 was delivered.")));
    const out = await h.say("where is A-1001?", DANA);
    expect(out.phase).toBe("COMPLETED");
    expect(out.replies.map((r) => r.text)).toEqual(["A-1001 was delivered."]);
    expect(h.script.requests[1]!.messages[1]).toMatchObject({ role: "assistant", content: [{ type: "tool_use", id: "toolu_ws" }] });
    expect(await h.badRequests(out.conversationId)).toEqual([]);
  });

  it("a tool_use id reused from an earlier run is refused before the call runs; later messages are still answered", async () => {
    // Sent again, the conversation would carry two tool_use blocks with one id, which the provider refuses.
    h.script.push(reply("tool_use", lookup("toolu_same", "A-1001")), reply("end_turn", text("A-1001 was delivered.")));
    const out = await h.say("where is A-1001?", DANA);
    expect(out.phase).toBe("COMPLETED");
    h.script.push(reply("tool_use", lookup("toolu_same", "A-1002")));
    const reused = await h.say("and A-1002?", { conversationId: out.conversationId });
    expect(reused.phase).toBe("ESCALATED");
    const calls = await h.db.toolCall.findMany({ select: { toolUseId: true, input: true } });
    expect(calls).toEqual([{ toolUseId: "toolu_same", input: { order_number: "A-1001" } }]);
    h.script.push(reply("end_turn", text("You're welcome.")));
    const next = await h.say("thanks", { conversationId: out.conversationId });
    expect(next.replies.map((r) => r.text)).toContain("You're welcome.");
    expect(await h.badRequests(out.conversationId)).toEqual([]);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("a tool_use id reused from an earlier turn of the same run ends in a handoff, not a database error", async () => {
    // The first call's row holds the id: recording the second would break the run's unique key on it.
    h.script.push(reply("tool_use", lookup("toolu_same", "A-1001")), reply("tool_use", lookup("toolu_same", "A-1002")));
    const out = await h.say("where are A-1001 and A-1002?", DANA);
    expect(out.phase).toBe("ESCALATED");
    expect(await h.db.toolCall.count()).toBe(1);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });
});
