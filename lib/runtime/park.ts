// PARK — a call becomes a handoff; the run waits (DESIGN §2.4). When a gate says `ask`, the step that records the
// call also writes what the next request will need and what a person must see: the approval handoff (the exact
// pending call, the rule that asked, a self-contained record), an honest notice to the customer, the audit record,
// and the run's phase WAITING_FOR_APPROVAL with its lease let go — one statement. The process may exit after it;
// `resume` (./resume.ts) rebuilds everything from the database.
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { approvalRecord, pendingNotice, readHandoffContext } from "@/lib/handoffs/records";
import type { GateRecord } from "@/lib/gates/evaluate";
import { addAudit } from "@/lib/store/audit";
import { addHandoff } from "@/lib/store/handoffs";
import { assertRunTransition } from "@/lib/store/phases";
import { Statement } from "@/lib/store/statement";
import type { CallFacts } from "@/lib/tools/types";
import type { RuntimeDeps } from "./deps";
import type { StepOutcome } from "./step";
import type { StepWrite } from "./step-write";

/** A call a person must decide, as the gates left it. */
export interface CallToPark {
  id: string;
  toolUseId: string;
  name: string;
  input: unknown;
  facts: CallFacts;
  verdict: GateRecord;
  /** a specialist (an agent run as a tool) asked for it */
  specialist?: string;
}

/**
 * Opens the approvals of `toPark` with step `w`: one handoff per call (the exact pending call, the rule that asked, a
 * self-contained record, which specialist asked), the customer told honestly what waits, the audit record. Done in
 * the statement that records the calls, whenever that statement also leaves other calls to run first — so a parked
 * call never exists without its handoff.
 */
export async function openApprovals(deps: RuntimeDeps, w: StepWrite, toPark: CallToPark[]): Promise<void> {
  if (!toPark.length) return;
  const db = storeOf(deps.db);
  const { ref, policy } = w.state;
  const now = new Date();
  const context = await readHandoffContext(db, ref, toPark[0]!.facts.orderNumber);
  for (const call of toPark) {
    const handoffId = crypto.randomUUID();
    const payload = approvalRecord(
      call.facts.orderNumber === toPark[0]!.facts.orderNumber ? context : await readHandoffContext(db, ref, call.facts.orderNumber),
      { call, facts: call.facts, rule: call.verdict, policyVersion: policy.version, specialist: call.specialist },
    );
    const notice = pendingNotice(call.name, call.facts);
    w.message({
      role: "assistant",
      author: "HARNESS",
      content: [{ type: "text", text: notice }],
      inTranscript: false,
      shownToCustomer: true,
      displayText: notice,
    });
    w.also((s) => {
      const name = s.unique("approval");
      addHandoff(s, name, {
        id: handoffId,
        tenantId: ref.tenantId,
        conversationId: ref.conversationId,
        runId: ref.id,
        toolCallId: call.id,
        kind: "APPROVAL",
        payload,
        amountCents: call.facts.amountCents ?? null,
        requiredApprovals: call.verdict.requiredApprovals ?? 1,
        expiresAt: new Date(now.getTime() + policy.rules.approvalTtlHours * 3600_000),
      });
      addAudit(
        s,
        `${name}_audit`,
        {
          tenantId: ref.tenantId,
          runId: ref.id,
          actor: "harness",
          action: "handoff.approval_requested",
          subject: handoffId,
          data: {
            tool: call.name,
            input: call.input,
            rule: call.verdict.gate,
            ...(call.specialist ? { specialist: call.specialist } : {}),
          },
        },
        { from: [name] },
      );
    });
  }
}

/**
 * Parks the run with step `w` (which already carries whatever else the step records, e.g. the turn that proposed the
 * calls): the approvals of `toPark` opened (calls parked by an earlier step already have theirs), the run
 * WAITING_FOR_APPROVAL with its lease let go. Writes the step.
 *
 * Calls parked by an earlier step are in the queue already: a person may have decided them while this advance ran the
 * phase's other calls. A decision that finds the run RUNNING only settles the call (the run is not waiting), so the
 * step counts, under a share lock (it waits for a decision in flight and reads what it wrote), the calls still parked.
 * None left: the run must not wait for a decision already made — it is taken back, leased to this advance, and goes
 * on (the next step reads the decided calls afresh).
 */
export async function park(deps: RuntimeDeps, w: StepWrite, toPark: CallToPark[]): Promise<StepOutcome> {
  const { ref } = w.state;
  await openApprovals(deps, w, toPark);
  w.transitionTo({ to: "WAITING_FOR_APPROVAL", release: true });
  w.also((s) => {
    // Live views learn that the run now waits for a person in the same commit.
    s.insert("parked_ev", "Event", {
      tenantId: ref.tenantId,
      conversationId: ref.conversationId,
      type: "run.phase",
      data: sql`jsonb_build_object('runId', ${ref.id}::text, 'phase', 'WAITING_FOR_APPROVAL')`,
    });
  });
  // Calls this step parks cannot have been decided (their handoffs are new): counted only when there are none.
  const stillParked = toPark.length
    ? undefined
    : sql`(SELECT count(*)::int FROM (SELECT 1 FROM "ToolCall" WHERE "runId" = ${ref.id} AND status = 'PARKED' FOR SHARE) p) AS "stillParked"`;
  const row = await w.run<{ stillParked?: number }>(storeOf(deps.db), stillParked);
  if (stillParked && row?.stillParked === 0 && (await takeBackDecidedRun(deps, w.state))) {
    w.state.recordedCalls = null;
    w.state.transcript = null;
    return { kind: "next" };
  }
  return { kind: "parked" };
}

/**
 * A run parked with nothing left parked (every call was decided while it ran): back to RUNNING, leased to this advance
 * again — unless a decision resumed it meanwhile (then its decider goes on). True when taken back.
 */
async function takeBackDecidedRun(deps: RuntimeDeps, state: StepWrite["state"]): Promise<boolean> {
  const { ref, lease } = state;
  assertRunTransition("WAITING_FOR_APPROVAL", "RUNNING");
  const s = Statement.plain();
  s.update(
    "resumed",
    "Run",
    {
      phase: sql`'RUNNING'::"RunPhase"`,
      updatedAt: sql`now()`,
      leaseOwner: lease.owner,
      leaseExpiresAt: sql`now() + make_interval(secs => ${lease.ms / 1000}::float8)`,
    },
    sql<boolean>`"Run".id = ${ref.id} AND "Run".phase = 'WAITING_FOR_APPROVAL'
      AND NOT EXISTS (SELECT 1 FROM "ToolCall" c WHERE c."runId" = ${ref.id} AND c.status = 'PARKED')`,
    { returning: sql`"Run".id` },
  );
  s.insert(
    "resumed_ev",
    "Event",
    {
      tenantId: ref.tenantId,
      conversationId: ref.conversationId,
      type: "run.phase",
      data: sql`jsonb_build_object('runId', ${ref.id}::text, 'phase', 'RUNNING')`,
    },
    { from: ["resumed"] },
  );
  const row = await s.run<{ resumed: boolean }>(storeOf(deps.db), sql`EXISTS (SELECT 1 FROM resumed) AS resumed`);
  return !!row?.resumed;
}
