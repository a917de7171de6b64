import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "@/test/db";
import { RUN_OUTCOMES, type RunOutcome, type RunOutcomeFacts, runOutcome, runOutcomeWhere } from "./run-outcome";

type Case = { name: string; facts: RunOutcomeFacts; want: RunOutcome };

const approval = (status: string) => ({ kind: "APPROVAL", status });
const escalation = (status = "PENDING") => ({ kind: "ESCALATION", status });
const f = (phase: string, o: Partial<RunOutcomeFacts> = {}): RunOutcomeFacts => ({
  phase,
  outcome: phase === "COMPLETED" ? "end_turn" : null,
  handoffs: [],
  toolCalls: [],
  ...o,
});

const CASES: Case[] = [
  { name: "the agent answered on its own", facts: f("COMPLETED"), want: "resolved_by_agent" },
  {
    name: "the agent used tools and answered",
    facts: f("COMPLETED", { toolCalls: [{ name: "lookup_order", status: "SUCCEEDED" }] }),
    want: "resolved_by_agent",
  },
  { name: "a reviewer approved", facts: f("COMPLETED", { handoffs: [approval("APPROVED")] }), want: "approved" },
  { name: "a reviewer edited and approved", facts: f("COMPLETED", { handoffs: [approval("EDITED")] }), want: "approved" },
  { name: "a reviewer denied", facts: f("COMPLETED", { handoffs: [approval("DENIED")] }), want: "denied" },
  { name: "nobody decided in time", facts: f("COMPLETED", { handoffs: [approval("EXPIRED")] }), want: "expired" },
  {
    name: "one approved, one denied: the denial shows",
    facts: f("COMPLETED", { handoffs: [approval("APPROVED"), approval("DENIED")] }),
    want: "denied",
  },
  {
    name: "one denied, one expired: the expiry shows",
    facts: f("COMPLETED", { handoffs: [approval("DENIED"), approval("EXPIRED")] }),
    want: "expired",
  },
  {
    name: "escalate_to_human ends the run with end_turn — still escalated, not a success",
    facts: f("COMPLETED", { handoffs: [escalation()], toolCalls: [{ name: "escalate_to_human", status: "SUCCEEDED" }] }),
    want: "escalated",
  },
  {
    name: "escalated through the conversation's existing escalation (opened by an earlier run)",
    facts: f("COMPLETED", { toolCalls: [{ name: "escalate_to_human", status: "SUCCEEDED" }] }),
    want: "escalated",
  },
  {
    name: "an escalate_to_human call that did not run does not count",
    facts: f("COMPLETED", { toolCalls: [{ name: "escalate_to_human", status: "DENIED" }] }),
    want: "resolved_by_agent",
  },
  { name: "the harness escalated", facts: f("ESCALATED", { outcome: "policy_ceiling: above $500" }), want: "escalated" },
  {
    name: "an approval, then a person took over",
    facts: f("COMPLETED", { handoffs: [approval("APPROVED"), escalation("RESOLVED")] }),
    want: "escalated",
  },
  {
    name: "the reply was held back because a person owns the conversation",
    facts: f("COMPLETED", { outcome: "end_turn (suppressed: a person owns the conversation)" }),
    want: "escalated",
  },
  { name: "dead letter, whatever else happened", facts: f("DEAD_LETTER", { handoffs: [escalation()] }), want: "dead_letter" },
  { name: "waiting for approval", facts: f("WAITING_FOR_APPROVAL", { handoffs: [approval("PENDING")] }), want: "waiting" },
  { name: "running", facts: f("RUNNING"), want: "running" },
  { name: "waiting to retry a tool is still running", facts: f("WAITING_FOR_RETRY"), want: "running" },
];

describe("run outcome", () => {
  it.each(CASES)("$name → $want", ({ facts, want }) => {
    expect(runOutcome(facts)).toBe(want);
  });

  it("the table covers every outcome", () => {
    expect(new Set(CASES.map((c) => c.want))).toEqual(new Set(RUN_OUTCOMES));
  });

  // The `where` is the same definition: every case, stored as a real run, is found by its own outcome's filter
  // and by no other.
  describe("the database filter agrees with the classifier", () => {
    let db: TestDatabase;
    const runIds = new Map<string, Case>();

    beforeAll(async () => {
      db = await createTestDatabase();
      const p = db.prisma;
      const tenantId = (await p.tenant.findUniqueOrThrow({ where: { slug: "acme" } })).id;
      for (const c of CASES) {
        const conversation = await p.conversation.create({ data: { tenantId, tokenHash: randomUUID() } });
        const run = await p.run.create({
          data: {
            tenantId,
            conversationId: conversation.id,
            phase: c.facts.phase as "COMPLETED",
            outcome: c.facts.outcome,
            maxTurns: 12,
            tokenBudget: 1000,
            policyVersion: 1,
            promptVersion: "p",
            toolsVersion: "t",
            model: "offline",
          },
        });
        for (const [i, t] of c.facts.toolCalls.entries())
          await p.toolCall.create({
            data: {
              tenantId,
              runId: run.id,
              toolUseId: `tu_${i}`,
              name: t.name,
              input: {},
              status: t.status as "SUCCEEDED",
              gateDecision: "allow",
              gateReason: "ok",
              position: i,
              messageSeq: 1,
            },
          });
        for (const h of c.facts.handoffs)
          await p.handoff.create({
            data: {
              tenantId,
              conversationId: conversation.id,
              runId: run.id,
              kind: h.kind as "APPROVAL",
              status: h.status as "PENDING",
              payload: {},
            },
          });
        runIds.set(run.id, c);
      }
    });
    afterAll(async () => {
      await db?.drop();
    });

    it.each(RUN_OUTCOMES)("%s", async (outcome) => {
      const found = await db.prisma.run.findMany({ where: { AND: [{ id: { in: [...runIds.keys()] } }, runOutcomeWhere(outcome)] } });
      const expected = [...runIds].filter(([, c]) => c.want === outcome).map(([id]) => id);
      expect(found.map((r) => r.id).sort()).toEqual(expected.sort());
    });
  });
});
