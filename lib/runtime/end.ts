// How a run ends: with the agent's final reply (COMPLETED), or handed to a person (ESCALATED, DEAD_LETTER). Either
// way in ONE statement with the rest of the step: the run's phase, the conversation let go of — or handed straight to
// a follow-up run when the customer wrote while it was busy (nothing they said is lost) — the events and webhooks.
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Store } from "@/lib/db/kysely";
import type { Sql } from "@/lib/store/statement";
import { formatCents } from "@/lib/money";
import { escalationRecord, readHandoffContext } from "@/lib/handoffs/records";
import type { HandoffPayload } from "@/lib/handoffs/record";
import { promptVersion } from "@/lib/agent/prompt";
import { toolsVersion } from "@/lib/tools/registry";
import type { EscalationRequest } from "@/lib/tools/types";
import { addAudit } from "@/lib/store/audit";
import { addEvent, addWebhookEvent } from "@/lib/store/events";
import { addHandoff, pendingEscalation } from "@/lib/store/handoffs";
import type { RunPhase } from "@/lib/store/phases";
import { addRun } from "@/lib/store/runs";
import type { Statement } from "@/lib/store/statement";
import type { GatedCall } from "./gating";
import type { RunState } from "./run-state";
import type { StepWrite } from "./step-write";

export type EndPhase = Extract<RunPhase, "COMPLETED" | "ESCALATED" | "DEAD_LETTER">;

/** What the step ending a run returns: whether the conversation went straight to a follow-up run. */
export interface Ended {
  phase: EndPhase;
  followUpRunId: string | null;
}

/** Ends the run with this step: phase, conversation released (or handed to a follow-up run), events, webhooks. */
export function endRun(
  w: StepWrite,
  phase: EndPhase,
  outcome: string | Sql,
  opts: { holdConversation?: boolean } = {},
): { followUpRunId: string } {
  const { ref } = w.state;
  const followUpRunId = randomUUID();
  w.transitionTo({ to: phase, release: true, outcome });
  if (!opts.holdConversation) w.conversation({ releaseRun: { runId: ref.id, followUpRunId } });
  w.also((s) => {
    addFollowUpRun(s, ref, followUpRunId, w.state.model);
    addEvent(s, "ended_ev", {
      tenantId: ref.tenantId,
      conversationId: ref.conversationId,
      type: "run.phase",
      data: { runId: ref.id, phase },
    });
    if (phase !== "ESCALATED") {
      addWebhookEvent(s, "ended_wh", {
        tenantId: ref.tenantId,
        type: phase === "COMPLETED" ? "run.completed" : "run.dead_lettered",
        payload: { runId: ref.id, conversationId: ref.conversationId, phase },
      });
    }
  });
  return { followUpRunId };
}

/**
 * The follow-up run, created only if the conversation's update handed the conversation to it (customer text was
 * queued and no person owns it). It runs under the tenant's current policy and delivers the queued text first.
 */
function addFollowUpRun(s: Statement, ref: RunState["ref"], id: string, model: string): void {
  const budgets = (field: string) =>
    sql<number>`(SELECT (pv.rules->'budgets'->>${field})::int FROM "PolicyVersion" pv JOIN "Tenant" t ON t.id = pv."tenantId" AND t."policyVersion" = pv.version WHERE t.id = ${ref.tenantId})`;
  addRun(
    s,
    "next_run",
    {
      id,
      tenantId: ref.tenantId,
      conversationId: ref.conversationId,
      policyVersion: sql<number>`(SELECT "policyVersion" FROM "Tenant" WHERE id = ${ref.tenantId})` as unknown as number,
      maxTurns: budgets("maxTurns"),
      tokenBudget: budgets("tokenBudget"),
      promptVersion,
      toolsVersion,
      model,
    },
    { from: ["conv"], where: sql<boolean>`conv."followUp"` },
  );
}

export const HONEST_HANDOFF_NOTICE =
  "I'm sorry — I couldn't finish this on my own. I've passed your conversation to our team with a summary, and a person will follow up here.";

export interface Escalation extends EscalationRequest {
  phase?: Extract<EndPhase, "ESCALATED" | "DEAD_LETTER">;
  /** what the customer is told (the default is an honest handoff notice) */
  notice?: string;
  refusedCall?: HandoffPayload["refusedCall"];
  /**
   * The run's last message asks for tools whose results could not be written: the conversation stays with the run
   * (what anyone writes meanwhile is queued) until a supervisor retries it — a message after an unanswered tool_use
   * would break every later request, and the approved call would never run.
   */
  holdConversation?: boolean;
}

/**
 * Adds an escalation handoff to a step (at most one pending per conversation): the record, the conversation marked
 * as waiting for a person (unless a person already owns it), the audit record. Reads what the record needs first.
 */
export async function openEscalation(
  db: Store,
  w: StepWrite,
  e: EscalationRequest & { refusedCall?: HandoffPayload["refusedCall"]; toolCallId?: string | null; actor?: string; specialist?: string },
  handoffId: string = randomUUID(),
): Promise<string> {
  const { ref } = w.state;
  // A conversation keeps one pending escalation: a repeat points at it (and a racing one inserts nothing).
  const pending = await pendingEscalation(db, ref.conversationId);
  if (pending) return pending.id;
  const ctx = await readHandoffContext(db, ref, e.orderNumber);
  const payload = escalationRecord(ctx, e);
  w.conversation({ status: sql`CASE WHEN status = 'open' THEN 'escalated'::"ConversationStatus" ELSE status END` });
  w.also((s) => {
    const name = s.unique("esc");
    addHandoff(s, name, {
      id: handoffId,
      tenantId: ref.tenantId,
      conversationId: ref.conversationId,
      runId: ref.id,
      toolCallId: e.toolCallId ?? null,
      kind: "ESCALATION",
      payload,
      amountCents: e.amountCents ?? null,
    });
    addAudit(
      s,
      `${name}_audit`,
      {
        tenantId: ref.tenantId,
        runId: ref.id,
        actor: e.actor ?? "harness",
        action: "handoff.escalated",
        subject: handoffId,
        data: { trigger: e.trigger, reason: e.reason },
      },
      { from: [name] },
    );
  });
  return handoffId;
}

/**
 * The escalation of a call refused above the policy ceiling (a refusal that must not be retried around): a person is
 * asked to look, and the call's result says so (`escalated`, the handoff's id). `specialist`: the path of the
 * specialist that asked, when one did. `approved`: the call had its approval already (judged again where it was to
 * act, lib/runtime/judged-again) — that handoff stays the call's own, and this one names the call in its record.
 */
export async function openCeilingEscalation(
  db: Store,
  w: StepWrite,
  g: GatedCall & { handoff: { kind: "escalation" } },
  opts: { specialist?: { path: string; title: string }; approved?: boolean } = {},
): Promise<string> {
  const { specialist } = opts;
  const { facts, reason } = g.handoff;
  const handoffId = await openEscalation(db, w, {
    trigger: "policy_ceiling",
    rootCause: reason,
    recommendedAction: `Review the request (${facts.summary}) and decide on an exception or an alternative with the customer.`,
    reason: specialist
      ? `Above the policy ceiling (asked by the ${specialist.title.toLowerCase()}): ${facts.summary}.`
      : `Above the policy ceiling: ${facts.summary}.`,
    orderNumber: facts.orderNumber ?? null,
    amountCents: facts.amountCents ?? null,
    toolCallId: opts.approved ? null : g.id,
    ...(specialist ? { specialist: specialist.path } : {}),
    refusedCall: { toolName: g.name, input: (g.input ?? {}) as Record<string, unknown>, amountCents: facts.amountCents ?? null },
  });
  g.result = { ...(g.result as object), escalated: true, handoff_id: handoffId };
  return handoffId;
}

/**
 * Degrades gracefully when the run cannot go on (budget, refusal, truncation, an unknown stop reason, a dead model
 * or tool): a self-contained escalation written by code, an honest notice to the customer, the run ended — all in
 * the step `w` (which may also carry the model call that led here).
 */
export async function escalateRun(db: Store, w: StepWrite, e: Escalation): Promise<Ended> {
  await openEscalation(db, w, {
    ...e,
    recommendedAction: e.recommendedAction || "Read the summary, take over the conversation and finish the customer's request.",
  });
  // When something was already done (an approved refund ran, then a budget ran out), the customer is told what was
  // done — never only "I couldn't finish".
  const done = e.notice === undefined && w.state.done.effects.length ? await whatWasDone(db, w.state.ref.id) : [];
  const notice =
    e.notice ??
    (done.length
      ? `Done so far: ${done.join("; ")}. I couldn't finish the rest on my own, so I've passed your conversation to our team with a summary, and a person will follow up here.`
      : HONEST_HANDOFF_NOTICE);
  w.message({
    role: "assistant",
    author: "HARNESS",
    content: [{ type: "text", text: notice }],
    inTranscript: false,
    shownToCustomer: true,
    displayText: notice,
  });
  const phase = e.phase ?? "ESCALATED";
  const { followUpRunId } = endRun(w, phase, `${e.trigger}: ${e.reason}`, { holdConversation: e.holdConversation });
  const row = await w.run<{ followUp: boolean }>(db, sql`conv."followUp" FROM conv`);
  return { phase, followUpRunId: row?.followUp ? followUpRunId : null };
}

/** The effects this run recorded, in the customer's words: "a refund of $250.00 on A-1002". */
async function whatWasDone(db: Store, runId: string): Promise<string[]> {
  const rows = await db
    .selectFrom("EffectLedger")
    .select(["toolName", "input", "outcome"])
    .where("runId", "=", runId)
    .orderBy("createdAt")
    .execute();
  return rows.map(({ toolName, input, outcome }) => {
    const i = (input ?? {}) as Record<string, unknown>;
    const o = (outcome ?? {}) as Record<string, unknown>;
    const order = String(o.order_number ?? i.order_number ?? "your order").toUpperCase();
    switch (toolName) {
      case "refund_order":
        return `a refund of ${formatCents(Number(o.amount_cents ?? i.amount_cents ?? 0))} on ${order}`;
      case "create_replacement":
        return `a replacement for ${order}${o.tracking ? ` (tracking ${o.tracking})` : ""}`;
      case "cancel_order":
        return `the cancellation of ${order}${typeof o.refunded_cents === "number" ? `, ${formatCents(o.refunded_cents)} refunded` : ""}`;
      case "update_shipping_address":
        return `the new delivery address for ${order}`;
      default:
        return toolName.replace(/_/g, " ");
    }
  });
}
