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
  await w.run(storeOf(deps.db));
  return { kind: "parked" };
}
