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
