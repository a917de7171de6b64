import { execFile } from "node:child_process";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import { decideHandoff } from "@/lib/handoffs/decide";
import { receiveCustomerMessage } from "@/lib/conversations/intake";
import { openConversation } from "@/lib/conversations/intake";
import { runWorkerOnce } from "@/lib/runtime/worker";

// A worker is a separate process killed abruptly at a failpoint (process.exit inside the step: no finally,
// no cleanup — like kill -9). Another worker must then finish the run with one effect and a valid transcript.
const LEASE_MS = 400;
const root = path.resolve(__dirname, "..", "..");

function crashingWorker(url: string, failpoint: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", "scripts/agent.ts", "worker", "--once"], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: url, SUPPORT_DB_NAME: "", SUPPORT_FAILPOINT: failpoint, SUPPORT_LEASE_MS: String(LEASE_MS), SUPPORT_SKIP_SEED: "1" },
      timeout: 60_000,
    }, (err, _stdout, stderr) => resolve({ code: err ? (err as { code?: number }).code ?? null : 0, stderr }));
  });
}

let h: Harness;
beforeEach(async () => { h = await createHarness({ leaseMs: LEASE_MS }); });
afterEach(async () => { await h.close(); });

async function finishWithAnotherWorker() {
  await new Promise((r) => setTimeout(r, LEASE_MS + 100)); // the dead worker's lease expires
  await runWorkerOnce(h.newDeps("rescuer"));
}

async function queueFreshRefund(text: string) {
  const dana = await h.db.customer.findFirstOrThrow({ where: { email: "dana@example.com" } });
  const { conversation } = await openConversation(h.db, { tenantId: h.acme.id, customerId: dana.id });
  const intake = await receiveCustomerMessage(h.db, { tenantId: h.acme.id, conversationId: conversation.id, text, model: h.deps.model.model });
  if (intake.kind !== "started") throw new Error("expected a new run");
  return { conversationId: conversation.id, runId: intake.runId };
}

async function expectOneRefund(conversationId: string, runId: string, cents: number) {
  const effects = await h.effects();
  expect(effects.filter((e) => e.toolName === "refund_order")).toHaveLength(1);
  const refunds = await h.db.refund.findMany();
  expect(refunds).toHaveLength(1);
  expect(refunds[0]!.amountCents).toBe(cents);
  expect((await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase).toBe("COMPLETED");
  expect(await h.transcriptProblems(conversationId)).toEqual([]);
  const agentReplies = await h.db.message.findMany({ where: { conversationId, author: "AGENT", shownToCustomer: true } });
  expect(agentReplies).toHaveLength(1);
}

describe("a worker killed between claiming a run and recording its effect", () => {
  // An automatic refund ($42.50) from a fresh run: model call, gates and the effect all happen in the worker.
  it.each(["after-claim", "after-model-response", "after-gate", "before-effect:refund_order", "after-effect:refund_order", "after-results-appended"])(
    "fresh run, crash at %s → another worker finishes with exactly one refund",
    async (point) => {
      const { conversationId, runId } = await queueFreshRefund("Please refund order A-1001, the zip broke.");
      const crashed = await crashingWorker(h.tdb.url, point);
      expect(crashed.code, crashed.stderr).toBe(86);
      await finishWithAnotherWorker();
      await expectOneRefund(conversationId, runId, 4250);
    },
  );

  // A $250 refund approved by a reviewer: the resume executes exactly the approved call, once.
  it.each(["after-claim", "before-effect:refund_order", "after-effect:refund_order", "after-results-appended"])(
    "approved resume, crash at %s → one refund",
    async (point) => {
      const out = await h.say("I'm dana@example.com, order A-1002 arrived damaged. Please refund it.");
      await decideHandoff(h.db, { tenantId: h.acme.id, staffId: h.staff.raj.id }, { handoffId: out.handoffs[0]!.id, decision: "approve" });
      const crashed = await crashingWorker(h.tdb.url, point);
      expect(crashed.code, crashed.stderr).toBe(86);
      await finishWithAnotherWorker();
      await expectOneRefund(out.conversationId, out.runId!, 25000);
    },
  );
});

describe("a worker killed after a read-only call ran, before its turn was recorded", () => {
  // lookup_order is allowed and read-only: it runs at once and is recorded with its turn and results in one
  // statement. Dying in between leaves nothing recorded of the turn; the next worker simply redoes it.
  it("another worker redoes the turn: one call recorded, one reply, a valid transcript", async () => {
    const { conversationId, runId } = await queueFreshRefund("Where is my order A-1001?");
    const crashed = await crashingWorker(h.tdb.url, "after-effect:lookup_order");
    expect(crashed.code, crashed.stderr).toBe(86);
    expect(await h.db.toolCall.count({ where: { runId } })).toBe(0); // the dead worker recorded nothing of the turn
    await finishWithAnotherWorker();
    expect((await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase).toBe("COMPLETED");
    const calls = await h.db.toolCall.findMany({ where: { runId } });
    expect(calls.map((c) => [c.name, c.status, c.attempts])).toEqual([["lookup_order", "SUCCEEDED", 1]]);
    const assistantTurns = await h.db.message.count({ where: { conversationId, role: "assistant", author: "AGENT" } });
    expect(await h.db.modelCall.count({ where: { runId, error: null } })).toBe(assistantTurns);
    expect(await h.transcriptProblems(conversationId)).toEqual([]);
    const replies = await h.db.message.findMany({ where: { conversationId, author: "AGENT", shownToCustomer: true } });
    expect(replies).toHaveLength(1);
    expect(replies[0]!.displayText).toMatch(/A-1001/);
  });
});
