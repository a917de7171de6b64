// A lookup answers with the order its gates read (ToolDefinition `factsWithRead`): one read of the order per lookup,
// not one for the gates and another for the tool — and a lookup that runs later reads for itself.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { storeOf } from "@/lib/db/kysely";
import { lookupOrder } from "@/lib/tools/lookup-order";
import { findOrder } from "@/lib/tools/order-helpers";
import { defineTool, ToolError } from "@/lib/tools/types";
import { createHarness, type Harness, statementsSentDuring } from "../runtime-harness";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

describe("a lookup", () => {
  it("reads the order once: the gates' read is what the tool answers with", async () => {
    const first = await h.say("Hi, I'm dana@example.com, my order is A-1002.");
    const texts = await statementsSentDuring(() => h.say("Where is my order A-1002?", { conversationId: first.conversationId }));
    const lookups = await h.db.toolCall.findMany({
      where: { name: "lookup_order", run: { conversationId: first.conversationId } },
      orderBy: { createdAt: "asc" }, // the last is the second message's
    });
    expect(lookups.length).toBeGreaterThan(0);
    const last = lookups.at(-1)!;
    expect(last).toMatchObject({ status: "SUCCEEDED", isError: false });
    // The answer is the whole order as the tool presents it (its shipment too), from the gates' one read.
    expect(last.result).toMatchObject({ order_number: "A-1002", shipment: { carrier: "UPS", tracking: "1Z9A7E3W0300001002" } });
    // One read of the order for the lookup — the full one (order and shipments) — and no narrow read for its gates.
    const lookupReads = texts.filter((t) => /FROM "Order" o WHERE/.test(t));
    expect(lookupReads).toHaveLength(1);
    expect(lookupReads[0]).toMatch(/FROM "Shipment"/);
    expect(texts.filter((t) => /^select "customerId", "status", "totalCents", "refundedCents" from "Order"/i.test(t))).toEqual([]);
  });
});

describe("lookup_order's tool body", () => {
  const ctx = (over: Record<string, unknown>) => ({
    tenantId: h.acme.id,
    conversationId: "c",
    runId: "r",
    toolCallId: "t",
    idempotencyKey: "k",
    ...over,
  });

  it("answers from the gates' read without a statement, reads for itself without one, and checks the owner either way", async () => {
    const db = storeOf(h.db);
    const order = await findOrder(db, h.acme.id, "A-1002");
    const owner = order!.customerId;
    const noDb = new Proxy(
      {},
      {
        get: () => {
          throw new Error("the tool read the database");
        },
      },
    );

    const fromGates = await lookupOrder.execute(
      { order_number: "A-1002" },
      ctx({ db: noDb, verifiedCustomerId: owner, gatesRead: order }) as never,
    );
    const fromItsOwnRead = await lookupOrder.execute({ order_number: "A-1002" }, ctx({ db, verifiedCustomerId: owner }) as never);
    expect(fromGates).toEqual(fromItsOwnRead);
    expect(fromGates).toMatchObject({ order_number: "A-1002" });

    // Someone else's order, or none, is "not found" whichever way it was read.
    for (const c of [
      ctx({ db: noDb, verifiedCustomerId: "someone-else", gatesRead: order }),
      ctx({ db: noDb, verifiedCustomerId: owner, gatesRead: null }),
      ctx({ db, verifiedCustomerId: "someone-else" }),
    ]) {
      const err = await lookupOrder.execute({ order_number: "A-1002" }, c as never).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ToolError);
      expect((err as ToolError).message).toMatch(/No order A-1002 was found/);
    }
  });
});

describe("defineTool", () => {
  it("refuses a tool that acts yet would answer from its gates' read", () => {
    const acting = { ...lookupOrder, name: "acting_lookup", readOnly: false };
    expect(() => defineTool(acting)).toThrow(/only a read-only tool may answer from its gates' read/);
    expect(defineTool({ ...lookupOrder })).toMatchObject({ name: "lookup_order" });
  });
});
