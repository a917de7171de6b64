import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import { AppError } from "@/lib/errors";
import { decideHandoff } from "@/lib/runtime/resume";
import { storeOf } from "@/lib/db/kysely";
import { advanceConversationFrom, advanceRun, claimFor } from "@/lib/runtime/advance";
import { openConversation, receiveCustomerMessage } from "@/lib/conversations/intake";
import { runWorkerOnce } from "@/lib/runtime/worker";
import { performEffect } from "@/lib/commerce/provider";
import { claimHandoff } from "@/lib/console/claims";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

async function parkRefund() {
  const out = await h.say("I'm dana@example.com, order A-1002 arrived damaged. Please refund it.");
  expect(out.phase).toBe("WAITING_FOR_APPROVAL");
  return { out, handoff: out.handoffs[0]! };
}

describe("racing decisions and workers", () => {
  it("20 concurrent decisions on one handoff → one effect, every other one refused with a clear code", async () => {
    const { out, handoff } = await parkRefund();
    const deciders = ["raj@acme.test", "ada@acme.test", "sol@acme.test"];
    const attempts = Array.from({ length: 20 }, (_, i) =>
      h.decide(handoff.id, deciders[i % 3]!, i % 5 === 4 ? "deny" : "approve", { version: 1, reason: "race" }),
    );
    const settled = await Promise.allSettled(attempts);
    const won = settled.filter((s) => s.status === "fulfilled");
    const lost = settled.filter((s): s is PromiseRejectedResult => s.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(19);
    for (const l of lost) {
      expect(l.reason).toBeInstanceOf(AppError);
      expect(["ALREADY_DECIDED", "STALE_VERSION"]).toContain((l.reason as AppError).code);
    }
    const final = await h.db.handoff.findUniqueOrThrow({ where: { id: handoff.id } });
    expect(await h.effects()).toHaveLength(final.status === "APPROVED" ? 1 : 0);
    expect(await h.db.refund.count()).toBe(final.status === "APPROVED" ? 1 : 0);
    expect(await h.transcriptProblems(out.conversationId)).toEqual([]);
  });

  it("four eyes, both approvers at once: the one who waited for the lock sees the other's approval and completes it", async () => {
    // The second decider's lock wait must not leave it reading the approvals as they were before it waited (it would
    // record a second "first" approval and leave the refund pending).
    for (let i = 0; i < 3; i++) {
      await h.db.order.updateMany({ where: { number: "A-1004" }, data: { refundedCents: 0 } });
      const out = await h.say("I'm dana@example.com, order A-1004. Please refund A-1004, it's not what I ordered.");
      const handoff = out.handoffs[0]!;
      expect(handoff.requiredApprovals).toBe(2);
      const outcomes = await Promise.all([
        h.decide(handoff.id, "raj@acme.test", "approve"),
        h.decide(handoff.id, "ada@acme.test", "approve"),
      ]);
      expect(outcomes.map((o) => o.outcome).sort()).toEqual(["approved", "awaiting_second_approval"]);
      expect(await h.db.handoffApproval.count({ where: { handoffId: handoff.id } })).toBe(2);
      expect((await h.db.handoff.findUniqueOrThrow({ where: { id: handoff.id } })).status).toBe("APPROVED");
    }
    expect(await h.effects()).toHaveLength(3);
  });

  it("a double-clicked approve (same reviewer, same version, twice at once) → one effect", async () => {
    const { handoff } = await parkRefund();
    const [a, b] = await Promise.allSettled([
      h.decide(handoff.id, "raj@acme.test", "approve", { version: 1 }),
      h.decide(handoff.id, "raj@acme.test", "approve", { version: 1 }),
    ]);
    expect([a.status, b.status].sort()).toEqual(["fulfilled", "rejected"]);
    expect(await h.effects()).toHaveLength(1);
  });

  it("two workers racing to resume one approved run: one claims it, one effect", async () => {
    const { out, handoff } = await parkRefund();
    await decideHandoff(h.db, { tenantId: h.acme.id, staffId: h.staff.raj.id }, { handoffId: handoff.id, decision: "approve" });
    const results = await Promise.all([
      advanceRun(h.newDeps("worker-a"), out.runId!),
      advanceRun(h.newDeps("worker-b"), out.runId!),
      advanceRun(h.newDeps("worker-c"), out.runId!),
    ]);
    expect(results.filter((r) => r.claimed)).toHaveLength(1);
    expect(await h.effects()).toHaveLength(1);
    expect((await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase).toBe("COMPLETED");
  });

  it("the lease is not re-entrant: the same runtime advancing one run twice at once claims it once", async () => {
    const { out, handoff } = await parkRefund();
    await decideHandoff(h.db, { tenantId: h.acme.id, staffId: h.staff.raj.id }, { handoffId: handoff.id, decision: "approve" });
    const results = await Promise.all([advanceRun(h.deps, out.runId!), advanceRun(h.deps, out.runId!)]);
    expect(results.filter((r) => r.claimed)).toHaveLength(1);
    expect(await h.effects()).toHaveLength(1);
  });

  it("a run created (or resumed) with the caller's lease is not taken by a polling worker in between", async () => {
    const dana = await h.db.customer.findFirstOrThrow({ where: { email: "dana@example.com" } });
    const { conversation } = await openConversation(h.db, { tenantId: h.acme.id, customerId: dana.id });
    const created = claimFor(h.deps);
    const intake = await receiveCustomerMessage(h.db, {
      tenantId: h.acme.id,
      conversationId: conversation.id,
      text: "My order A-1002 arrived damaged, please refund it.",
      model: "m",
      claimFor: created,
    });
    if (intake.kind !== "started") throw new Error("expected a run");
    const polled = await runWorkerOnce(h.newDeps("background-worker"));
    expect(polled.advanced).toBe(0);
    const mine = await advanceConversationFrom(h.deps, intake.runId, { claimedAs: created });
    expect(mine.phase).toBe("WAITING_FOR_APPROVAL");

    const handoff = await h.db.handoff.findFirstOrThrow({ where: { runId: intake.runId } });
    const resumed = claimFor(h.deps);
    const decided = await decideHandoff(
      h.db,
      { tenantId: h.acme.id, staffId: h.staff.raj.id },
      { handoffId: handoff.id, decision: "approve" },
      { claimFor: resumed },
    );
    expect(decided.kind === "approved" && decided.resumable).toBe(true);
    expect((await runWorkerOnce(h.newDeps("background-worker"))).advanced).toBe(0);
    expect((await advanceConversationFrom(h.deps, intake.runId, { claimedAs: resumed })).phase).toBe("COMPLETED");
    expect(await h.effects()).toHaveLength(1);
  });

  it("the provider honours idempotency keys: same key → the recorded outcome, never a second effect", async () => {
    const order = await h.db.order.findFirstOrThrow({ where: { number: "A-1001" } });
    // Each attempt in its own transaction, as a worker's effect would be (the key decides, not the lease).
    const attempt = () =>
      storeOf(h.db)
        .transaction()
        .execute((tx) =>
          performEffect(
            tx,
            {
              tenantId: h.acme.id,
              idempotencyKey: "key-1",
              operation: "refund_order",
              request: { n: 1 },
              ledger: { runId: "r", toolCallId: "c" },
            },
            async (t) => {
              const id = crypto.randomUUID();
              await t
                .insertInto("Refund")
                .values({ id, tenantId: h.acme.id, orderId: order.id, amountCents: 100, reason: "t", idempotencyKey: "key-1" })
                .execute();
              return { refund_id: id };
            },
          ),
        )
        .catch(async (err) => {
          // The loser of a race on the key rolled back whole; asking again returns the recorded outcome.
          if ((err as { code?: string }).code !== "23505") throw err;
          return storeOf(h.db)
            .transaction()
            .execute((tx) =>
              performEffect(
                tx,
                {
                  tenantId: h.acme.id,
                  idempotencyKey: "key-1",
                  operation: "refund_order",
                  request: { n: 1 },
                  ledger: { runId: "r", toolCallId: "c" },
                },
                async () => {
                  throw new Error("must not run again");
                },
              ),
            );
        });
    const outcomes = await Promise.all(Array.from({ length: 8 }, attempt));
    expect(new Set(outcomes.map((o) => o.outcome.refund_id)).size).toBe(1);
    expect(outcomes.filter((o) => !o.replayed)).toHaveLength(1);
    expect(await h.db.refund.count({ where: { idempotencyKey: "key-1" } })).toBe(1);
    expect(await h.db.effectLedger.count({ where: { idempotencyKey: "key-1" } })).toBe(1);
  });
});

describe("racing claims", () => {
  it("a claim that waited for a competing claim to commit names the reviewer who got the item", async () => {
    const { handoff } = await parkRefund();
    // Raj's claim is being written — the row locked, not yet committed — when Rita's claim begins: her statement reads
    // the item free, then its update waits for Raj's and finds the item taken.
    const raj = new pg.Client({ connectionString: h.tdb.url });
    await raj.connect();
    try {
      await raj.query("BEGIN");
      await raj.query(`UPDATE "Handoff" SET "claimedById" = $1, "claimExpiresAt" = now() + interval '10 minutes' WHERE id = $2`, [
        h.staff.raj.id,
        handoff.id,
      ]);
      const rita = claimHandoff(h.db, { tenantId: h.acme.id, staffId: h.staff.rita.id }, handoff.id).then(
        () => null,
        (err: unknown) => err,
      );
      await expect
        .poll(async () => {
          const rows = await h.db.$queryRaw<Array<{ n: number }>>`
            SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
          return rows[0]!.n;
        })
        .toBe(1);
      await raj.query("COMMIT");
      const refused = await rita;
      expect(refused).toBeInstanceOf(AppError);
      expect(refused).toMatchObject({
        code: "CLAIMED_BY_OTHER",
        userMessage: "Raj is working on this item.",
        details: { claimedBy: "Raj" },
      });
    } finally {
      await raj.end();
    }
  });
});
