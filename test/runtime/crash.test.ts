import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../runtime-harness";
import { decideHandoff } from "@/lib/runtime/resume";
import { receiveCustomerMessage } from "@/lib/conversations/intake";
import { openConversation } from "@/lib/conversations/intake";
import { runWorkerOnce } from "@/lib/runtime/worker";
import type { OfflineStep } from "@/lib/model/offline/types";

// A worker is a separate process killed abruptly at a failpoint (process.exit inside the step: no finally,
// no cleanup — like kill -9). Another worker must then finish the run with one effect and a valid transcript.
const LEASE_MS = 400;
const root = path.resolve(__dirname, "..", "..");

function crashingWorker(url: string, failpoint: string, script?: OfflineStep[]): Promise<{ code: number | null; stderr: string }> {
  const scriptFile = script ? path.join(mkdtempSync(path.join(tmpdir(), "crash-script-")), "script.json") : undefined;
  if (scriptFile) writeFileSync(scriptFile, JSON.stringify(script));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/agent.ts", "worker", "--once"],
      {
        cwd: root,
        env: {
          ...process.env,
          DATABASE_URL: url,
          SUPPORT_DB_NAME: "",
          SUPPORT_FAILPOINT: failpoint,
          SUPPORT_LEASE_MS: String(LEASE_MS),
          SUPPORT_SKIP_SEED: "1",
          ...(scriptFile ? { SUPPORT_OFFLINE_SCRIPT: scriptFile } : {}),
        },
        timeout: 60_000,
      },
      (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
    );
  });
}

let h: Harness;
beforeEach(async () => {
  h = await createHarness({ leaseMs: LEASE_MS });
});
afterEach(async () => {
  await h.close();
});

async function finishWithAnotherWorker() {
  await new Promise((r) => setTimeout(r, LEASE_MS + 100)); // the dead worker's lease expires
  await runWorkerOnce(h.newDeps("rescuer"));
}

async function queueFreshRefund(text: string) {
  const dana = await h.db.customer.findFirstOrThrow({ where: { email: "dana@example.com" } });
  const { conversation } = await openConversation(h.db, { tenantId: h.acme.id, customerId: dana.id });
  const intake = await receiveCustomerMessage(h.db, {
    tenantId: h.acme.id,
    conversationId: conversation.id,
    text,
    model: h.deps.model.model,
  });
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
  it.each([
    "after-claim",
    "after-model-response",
    "after-gate",
    "before-effect:refund_order",
    "after-effect:refund_order",
    "after-results-appended",
  ])("fresh run, crash at %s → another worker finishes with exactly one refund", async (point) => {
    const { conversationId, runId } = await queueFreshRefund("Please refund order A-1001, the zip broke.");
    const crashed = await crashingWorker(h.tdb.url, point);
    expect(crashed.code, crashed.stderr).toBe(86);
    await finishWithAnotherWorker();
    await expectOneRefund(conversationId, runId, 4250);
  });

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

describe("a worker killed after recording a turn whose calls partly park", () => {
  // One turn proposes an automatic refund (runs after the turn is recorded) and a replacement a person must approve.
  // The approval must exist from the statement that recorded the parked call: a worker dying before the refund ran
  // must not leave a parked call nobody is asked about.
  it("the parked call has its handoff; the rescuer runs the refund once and the run waits for the person", async () => {
    const { runId } = await queueFreshRefund("Refund A-1001 and replace A-1003, please.");
    const crashed = await crashingWorker(h.tdb.url, "after-gate", [
      {
        parallel: [
          { id: "toolu_refund", name: "refund_order", input: { order_number: "A-1001", amount_cents: 4250, reason: "zip broke" } },
          { id: "toolu_replace", name: "create_replacement", input: { order_number: "A-1003", reason: "lost in transit" } },
        ],
      },
    ]);
    expect(crashed.code, crashed.stderr).toBe(86);
    const parked = await h.db.toolCall.findFirstOrThrow({ where: { runId, toolUseId: "toolu_replace" } });
    expect(parked.status).toBe("PARKED");
    expect(await h.db.handoff.count({ where: { toolCallId: parked.id, status: "PENDING" } })).toBe(1);
    await finishWithAnotherWorker();
    expect((await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase).toBe("WAITING_FOR_APPROVAL");
    expect((await h.effects()).map((e) => e.toolName)).toEqual(["refund_order"]);
    expect(await h.db.handoff.count({ where: { runId, kind: "APPROVAL" } })).toBe(1);
  });
});

describe("a worker killed between a specialist's effect and the outer result (seed 003)", () => {
  const withSpecialists = () =>
    h.publish((r) => ({ ...r, allowedTools: [...r.allowedTools, "ask_returns_specialist", "ask_delivery_specialist"] }));
  const reply = (t: string): OfflineStep => ({ reply: { content: [{ type: "text", text: t }], stop_reason: "end_turn" } });
  const asks = (id: string, name: string, input: Record<string, unknown>): OfflineStep => ({ parallel: [{ id, name, input }] });

  it("an automatic refund inside a specialist: the rescuer finishes with one refund and the report", async () => {
    await withSpecialists();
    const { conversationId, runId } = await queueFreshRefund("Please refund order A-1001, the zip broke.");
    const crashed = await crashingWorker(h.tdb.url, "after-specialist-calls", [
      asks("outer", "ask_returns_specialist", { task: "Refund A-1001 in full, the zip broke.", order_number: "A-1001" }),
      asks("inner", "refund_order", { order_number: "A-1001", amount_cents: 4250, reason: "the zip broke" }),
    ]);
    expect(crashed.code, crashed.stderr).toBe(86);
    expect((await h.effects()).map((e) => e.toolName)).toEqual(["refund_order"]); // the effect committed before the crash
    h.script.push(reply("Refunded $42.50 on A-1001."), reply("Your refund of $42.50 for A-1001 is done."));
    await finishWithAnotherWorker();
    await expectOneRefund(conversationId, runId, 4250);
    const calls = await h.db.toolCall.findMany({ where: { runId }, orderBy: { createdAt: "asc" } });
    expect(calls.map((c) => [c.name, c.status, c.attempts])).toEqual([
      ["ask_returns_specialist", "SUCCEEDED", 1],
      ["refund_order", "SUCCEEDED", 1],
    ]);
  });

  it("an approved refund inside a specialist, crash right after it ran: one refund", async () => {
    await withSpecialists();
    h.script.push(
      asks("outer", "ask_returns_specialist", { task: "Refund A-1002, it arrived damaged.", order_number: "A-1002" }),
      asks("inner", "refund_order", { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" }),
    );
    const out = await h.say("Order A-1002 arrived damaged. Please refund it.", { customer: "dana@example.com" });
    expect(out.phase).toBe("WAITING_FOR_APPROVAL");
    expect(out.handoffs[0]).toMatchObject({ toolName: "refund_order", amountCents: 25000 });
    await decideHandoff(h.db, { tenantId: h.acme.id, staffId: h.staff.raj.id }, { handoffId: out.handoffs[0]!.id, decision: "approve" });
    const crashed = await crashingWorker(h.tdb.url, "after-specialist-calls");
    expect(crashed.code, crashed.stderr).toBe(86);
    h.script.push(reply("Refunded $250.00 on A-1002."), reply("Your refund of $250.00 for A-1002 is done."));
    await finishWithAnotherWorker();
    await expectOneRefund(out.conversationId, out.runId!, 25000);
  });
});
