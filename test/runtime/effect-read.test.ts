// A side effect's first read goes with its transaction's first statement (ToolDefinition `effectRead`): refund_order
// reads the order, under its row lock, in the lease renewal — the same row `findOrder` reads, the same lock.
import { sql } from "kysely";
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { storeOf } from "@/lib/db/kysely";
import { findOrder, lockedOrderOf, lockedOrderRead } from "@/lib/tools/order-helpers";
import { refundOrder } from "@/lib/tools/refund-order";
import { defineTool } from "@/lib/tools/types";
import { createHarness, type Harness } from "../runtime-harness";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

const tryLock = (number: string) =>
  sql`SELECT 1 FROM "Order" WHERE number = ${number} FOR UPDATE NOWAIT`.execute(storeOf(h.db)).then(
    () => "locked it",
    (err: { code?: string }) => err.code,
  );

describe("a side effect's read in its first statement", () => {
  it("answers the row findOrder reads (dates and shipments too) and holds its row lock until the transaction ends", async () => {
    // In a zone that is not UTC: a timestamp read without its zone would come back shifted (this machine runs in UTC).
    const zone = process.env.TZ;
    process.env.TZ = "America/New_York";
    onTestFinished(() => {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    });
    const store = storeOf(h.db);
    const expected = await findOrder(store, h.acme.id, "A-1002");
    expect(expected?.shipments.length).toBeGreaterThan(0);
    await store.transaction().execute(async (tx) => {
      const { rows } = await sql<{
        r: unknown;
      }>`SELECT ${refundOrder.effectRead!({ order_number: "a1002", amount_cents: 1, reason: "x" }, { tenantId: h.acme.id })} AS r`.execute(
        tx,
      );
      expect(lockedOrderOf(rows[0]!.r)).toEqual(expected);
      expect(await tryLock("A-1002")).toBe("55P03"); // lock_not_available: another transaction cannot take it
      expect(await tryLock("A-1001")).toBe("locked it"); // only that order
    });
    expect(await tryLock("A-1002")).toBe("locked it");
  });

  it("no such order (or another shop's) answers null; not read at all, undefined", async () => {
    const store = storeOf(h.db);
    const read = async (tenantId: string, number: string) =>
      (await sql<{ r: unknown }>`SELECT ${lockedOrderRead(tenantId, number)} AS r`.execute(store)).rows[0]!.r;
    expect(lockedOrderOf(await read(h.acme.id, "A-9999"))).toBeNull();
    const globex = await h.db.tenant.findUniqueOrThrow({ where: { slug: "globex" } });
    expect(lockedOrderOf(await read(globex.id, "A-1002"))).toBeNull();
    expect(lockedOrderOf(undefined)).toBeUndefined();
  });

  it("defineTool refuses it on a tool that is not a side effect", () => {
    expect(() =>
      defineTool({
        name: "reads_in_effect",
        description: "x",
        inputSchema: refundOrder.inputSchema,
        sideEffect: false,
        accountAction: false,
        facts: async () => ({ summary: "x" }),
        effectRead: () => sql`NULL`,
        execute: async () => ({}),
      }),
    ).toThrow(/only a side effect/);
  });
});
