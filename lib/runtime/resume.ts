// RESUME — a decision is applied; the run continues from its pending tool_use (DESIGN §2.4). A reviewer's decision
// (or an approval's expiry) is trusted application state, bound to the handoff's id, version and the exact call the
// reviewer saw — never a chat message. Approve → THAT call runs now; deny → an is_error result the model explains;
// edit → the edited call is gated again with the reviewer's authority and runs under its own idempotency key; expiry
// → its own outcome, never "denied". When the last parked call of the run is settled, the run goes back to RUNNING
// (leased to the decider, who continues it at once; or, for the worker's expiries, left due for a worker's claim) —
// the model is never asked to request the action again.
//
//   resumeRun(runtime, actor, decision)   — every caller: console, CLI, API, worker (expiry)
//   decideHandoff(db, actor, decision)    — the decision alone (tests that control who continues the run)
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { z } from "zod";
import type { Store } from "@/lib/db/kysely";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { evaluateGates } from "@/lib/gates/evaluate";
import { formatCents } from "@/lib/money";
import { addAudit } from "@/lib/store/audit";
import { addEvent, addWebhookEvent } from "@/lib/store/events";
import { dueApprovalExpiries, type LockedHandoff, lockForDecision, updateHandoff } from "@/lib/store/handoffs";
import type { Lease } from "@/lib/store/lease";
import { assertRunTransition, assertToolCallTransition, type ToolCallStatus } from "@/lib/store/phases";
import { type RunStateRow, runStateOf } from "@/lib/store/runs";
import { json, Statement } from "@/lib/store/statement";
import { callsOfLatestMessageRead, latestMessageCalls, type ToolCallRow } from "@/lib/store/tool-calls";
import { type TranscriptRow, transcriptRead } from "@/lib/store/transcript";
import { getTool } from "@/lib/tools/registry";
import { advanceConversationFrom, type AdvanceResult, claimFor, type LeaseClaim, type ResumedWith } from "./advance";
import type { RuntimeDeps } from "./deps";
import { knownToolGateInput, readVerification } from "./gating";
import { canonicalJson, idempotencyKey } from "./idempotency";
import { loadPolicy } from "./policy";
import { log } from "@/lib/log";
import { connectivityFailureKind } from "@/lib/db/outage";
import { FailuresOfAPass, processBackoff } from "@/lib/backoff";
import { withSpan } from "@/lib/telemetry/tracing";

export const decisionSchema = z.object({
  handoffId: z.string().min(1).max(64),
  decision: z.enum(["approve", "deny", "edit"]),
  /** The version the reviewer saw: a decision binds to it, never to "whatever is pending now". */
  version: z.number().int().positive().optional(),
  reason: z.string().trim().max(1000).optional(),
  editedInput: z.record(z.string(), z.unknown()).optional(),
});
export type DecisionInput = z.infer<typeof decisionSchema>;

/**
 * Who decides: a staff member of the tenant, or the harness expiring an approval past its TTL. `via` names the API
 * token a staff member acted through: the decision's own audit record carries it, written in the decision's commit.
 */
export type DecisionActor = { tenantId: string; staffId: string; via?: DecisionVia } | { tenantId: string; expiry: true };
export type DecisionVia = { tokenId: string; tokenName: string };

type DecisionFacts = { runId: string; handoffId: string; resumable: boolean; resumedWith: ResumedWith | null };
export type DecisionOutcome =
  | ({ kind: "approved" } & DecisionFacts)
  | ({ kind: "denied" } & DecisionFacts)
  | ({ kind: "expired" } & DecisionFacts)
  | { kind: "awaiting_second_approval"; handoffId: string; approvals: number; required: number };

interface Decided {
  callStatus: ToolCallStatus;
  handoffStatus: "APPROVED" | "DENIED" | "EDITED" | "EXPIRED";
  decision: string;
  review: Record<string, unknown>;
  result?: unknown;
  executed?: Record<string, unknown>;
  amountCents?: number | null;
  key?: string | null;
  reason?: string | null;
  audit: string;
}

/**
 * RESUME: applies a decision and continues the run from its pending tool_use in this process (the decision takes
 * the run's lease in its own commit, so no worker can take it in between). If continuing fails, the decision stands
 * and a worker picks the run up. Returns the decision's outcome and how far the run got. With `continueHere: false`
 * the decision leaves the run due and unleased instead, for whichever worker claims it (its NOTIFY wakes them).
 */
export async function resumeRun(
  runtime: RuntimeDeps,
  actor: DecisionActor,
  raw: unknown,
  opts: { continueHere?: boolean } = {},
): Promise<{ outcome: DecisionOutcome; advanced: AdvanceResult | null; resumeFailed: boolean }> {
  const claim = opts.continueHere === false ? null : claimFor(runtime);
  const outcome = await decideHandoff(runtime.db, actor, raw, claim ? { claimFor: claim } : {});
  if (outcome.kind === "awaiting_second_approval" || !outcome.resumable || !claim) return { outcome, advanced: null, resumeFailed: false };
  try {
    const advanced = await advanceConversationFrom(runtime, outcome.runId, { claimedAs: claim, resumedWith: outcome.resumedWith });
    return { outcome, advanced, resumeFailed: false };
  } catch (err) {
    log.error({ err, runId: outcome.runId }, "continuing the run after a decision failed; a worker will pick it up");
    return { outcome, advanced: null, resumeFailed: true };
  }
}

/**
 * A decision on an approval handoff. Refused with a clear code and nothing changed when: the id is another
 * tenant's (NOT_FOUND), the reviewer is not staff of the tenant (FORBIDDEN), the handoff was already decided
 * (ALREADY_DECIDED) or expired (EXPIRED), it changed since the version quoted (STALE_VERSION), another reviewer holds
 * the claim (CLAIMED_BY_OTHER), the amount is over the reviewer's authority (OVER_AUTHORITY), the same person would be
 * both approvers (SAME_APPROVER), or the input is bad (INVALID_INPUT, GATE_DENIED for an edit the gates refuse).
 * With `claimFor`, a decision that settles the run's last parked call takes the run's lease in the same commit.
 */
export function decideHandoff(
  client: object,
  actor: DecisionActor,
  raw: unknown,
  opts: { claimFor?: LeaseClaim } = {},
): Promise<DecisionOutcome> {
  const attributes = {
    "tenant.id": actor.tenantId,
    ...("staffId" in actor ? { "staff.id": actor.staffId } : { "decision.by": "expiry" }),
    "handoff.id": (raw as { handoffId?: unknown } | null)?.handoffId,
  };
  return withSpan("handoff.decide", attributes, async (span) => {
    const outcome = await decideInSpan(client, actor, raw, opts);
    span.setAttributes({ "handoff.outcome": outcome.kind, ...("runId" in outcome ? { "run.id": outcome.runId } : {}) });
    return outcome;
  });
}

async function decideInSpan(client: object, actor: DecisionActor, raw: unknown, opts: { claimFor?: LeaseClaim }): Promise<DecisionOutcome> {
  const db = storeOf(client);
  let input: DecisionInput | { handoffId: string; decision: "expire" };
  if ("expiry" in actor) input = raw as { handoffId: string; decision: "expire" };
  else {
    const parsed = decisionSchema.safeParse(raw);
    if (!parsed.success)
      throw new AppError("INVALID_INPUT", parsed.error.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; "));
    input = parsed.data;
  }
  let expiredNow = false;
  const deciding = db.transaction().execute(async (tx) => {
    const h = await lockForDecision(tx, actor.tenantId, input.handoffId, "staffId" in actor ? actor.staffId : null);
    if (!h) throw new AppError("NOT_FOUND", "This handoff was not found.");
    if (input.decision === "expire") {
      if (h.status !== "PENDING") return null;
      return writeDecision(tx, h, { actor: "harness" }, expiryDecision(), opts.claimFor);
    }
    if (!("staffId" in actor)) throw new AppError("FORBIDDEN", "Only staff decide.");
    const staff = h.staff;
    if (!staff) throw new AppError("FORBIDDEN", "You are not a reviewer of this shop.");
    const decider = { actor: staff.email, staffId: staff.id, via: actor.via };
    if (h.kind !== "APPROVAL")
      throw new AppError("INVALID_INPUT", "Escalations are resolved by taking the conversation over, not by approving.");
    if (h.status === "EXPIRED") throw new AppError("EXPIRED", "This approval request expired; the customer was told nothing was done.");
    if (h.status !== "PENDING") {
      const by = h.decidedByName;
      throw new AppError("ALREADY_DECIDED", `Already ${h.status.toLowerCase()}${by ? ` by ${by}` : ""}.`, {
        status: h.status,
        decidedBy: by,
      });
    }
    if (h.expiresAt && h.expiresAt < new Date()) {
      // Too late: the approval expires now (its own outcome), and a worker continues the run — not this caller,
      // whose decision is refused.
      expiredNow = true;
      return writeDecision(tx, h, { actor: "harness" }, expiryDecision());
    }
    if (input.version !== undefined && input.version !== h.version) {
      throw new AppError("STALE_VERSION", "This request changed since you opened it. Reload it and decide again.", {
        currentVersion: h.version,
      });
    }
    if (h.claimedById && h.claimedById !== staff.id && h.claimExpiresAt && h.claimExpiresAt > new Date()) {
      throw new AppError("CLAIMED_BY_OTHER", `${h.claimedByName ?? "Another reviewer"} is working on this item.`);
    }
    if (!h.toolCallId || !h.runId) throw new AppError("INVALID_INPUT", "This handoff has no pending call.");
    const call = h.call;
    if (!call) throw new AppError("INVALID_INPUT", "This handoff has no pending call.");
    if (call.status !== "PARKED") throw new AppError("ALREADY_DECIDED", "The pending call was already resolved.");

    if (input.decision === "deny") {
      if (!input.reason) throw new AppError("INVALID_INPUT", "A reason is required to deny.");
      const review = { decision: "denied", by: staff.name, reason: input.reason };
      return writeDecision(
        tx,
        h,
        decider,
        {
          callStatus: "DENIED",
          handoffStatus: "DENIED",
          decision: "deny",
          review,
          reason: input.reason,
          audit: "handoff.denied",
          result: {
            error_category: "permission",
            is_retryable: false,
            message: `A reviewer (${staff.name}) denied this request: ${input.reason}. Nothing was done. Explain this to the customer; do not retry.`,
            review,
          },
        },
        opts.claimFor,
      );
    }
    if (h.approverIds.includes(staff.id)) {
      throw new AppError("SAME_APPROVER", "You already approved this; a second, different reviewer must approve it.");
    }

    // What will run: the model's call, an earlier approver's edit, or this reviewer's edit (gated again).
    const approvedTerms = (h.editedInput ?? call.input) as Record<string, unknown>;
    let executed = approvedTerms;
    let amount = h.amountCents;
    let required = h.requiredApprovals;
    if (input.decision === "edit") {
      const edited = await regateEdit(tx, h, call, staff, input.editedInput);
      executed = edited.input;
      amount = edited.amountCents ?? amount;
      // Four eyes hold for what runs: an edit into the two-approver band needs a second person, as the same amount
      // proposed by the model would. An edit never lowers what the item was raised with.
      required = Math.max(required, edited.requiredApprovals);
    }
    if (amount !== null && staff.authorityLimitCents !== null && amount > staff.authorityLimitCents) {
      throw new AppError(
        "OVER_AUTHORITY",
        `${formatCents(amount)} is above your approval authority of ${formatCents(staff.authorityLimitCents)}.`,
      );
    }
    const edited = canonicalJson(executed) !== canonicalJson(call.input);
    // An approval counts only for the terms it was given for: new terms void the earlier approvals.
    const newTerms = canonicalJson(executed) !== canonicalJson(approvedTerms);
    const voided = newTerms ? h.approverNames : [];
    // Only approvals that still stand count: an approver since deactivated, or whose authority no longer covers the
    // amount, no longer makes one of the two.
    const approvals = (newTerms ? 0 : h.standingApprovers.length) + 1;
    if (approvals < required) {
      // Four eyes: this approval is recorded (with an edit, if any); a second, different person completes it.
      const s = Statement.plain();
      if (voided.length) s.delete("voided", "HandoffApproval", sql<boolean>`"HandoffApproval"."handoffId" = ${h.id}`);
      s.insert("approval", "HandoffApproval", { id: randomUUID(), handoffId: h.id, staffId: staff.id, version: h.version });
      updateHandoff(s, "handoff", h, {
        // What waits now: this reviewer's terms (the model's call again, when they edited back to it).
        ...(newTerms ? { editedInput: edited ? json(executed) : null, amountCents: amount } : {}),
        ...(required !== h.requiredApprovals ? { requiredApprovals: required } : {}),
        claimedById: null,
        claimExpiresAt: null,
      });
      addAudit(s, "audit", {
        tenantId: h.tenantId,
        runId: h.runId,
        actor: staff.email,
        action: "handoff.first_approval",
        subject: h.id,
        data: { edited, executed, required, ...(voided.length ? { voidedApprovals: voided } : {}), ...viaOf(decider) },
      });
      addEvent(s, "ev", {
        tenantId: h.tenantId,
        conversationId: h.conversationId,
        type: "handoff.updated",
        data: { handoffId: h.id, status: "PENDING", approvals },
      });
      await s.runThenCommit(tx); // the transaction's last statement
      return { kind: "awaiting_second_approval" as const, handoffId: h.id, approvals, required };
    }
    const names = [...h.standingApprovers, staff.name];
    const review = edited
      ? {
          decision: "edited",
          by: names.join(" and "),
          original_input: call.input,
          executed_input: executed,
          amount_cents: amount,
          note: input.reason ?? null,
        }
      : { decision: "approved", by: names.join(" and "), amount_cents: amount };
    return writeDecision(
      tx,
      h,
      decider,
      {
        callStatus: "APPROVED",
        handoffStatus: edited ? "EDITED" : "APPROVED",
        decision: edited ? "edit" : "approve",
        review,
        executed,
        amountCents: amount,
        // An edit is a different operation: it runs under its own idempotency key.
        key: edited
          ? idempotencyKey({ tenantId: h.tenantId, runId: h.runId!, toolUseId: call.toolUseId, toolName: call.name, input: executed })
          : call.idempotencyKey,
        reason: input.reason ?? null,
        audit: edited ? "handoff.edited" : "handoff.approved",
      },
      opts.claimFor,
    );
  });
  const outcome = await deciding.catch((err: unknown) => {
    // Too late, and the expiry itself could not be written (for a reason of its own, not the database's reach): the
    // decision is refused as too late all the same, and the approval stays pending for the worker's expiry pass, which
    // tries it again (lib/backoff) — the reviewer is not handed the expiry's error.
    if (!expiredNow || err instanceof AppError || connectivityFailureKind(err)) throw err;
    log.error(
      { err, handoffId: input.handoffId, tenantId: actor.tenantId },
      "expiring an approval past its expiry failed; it stays pending and a worker expires it",
    );
    throw tooLate();
  });
  if (expiredNow) throw tooLate();
  if (!outcome) throw new AppError("ALREADY_DECIDED", "This approval request was already resolved.");
  return outcome;
}

const tooLate = () => new AppError("EXPIRED", "This approval request expired before your decision; the customer is told nothing was done.");

function expiryDecision(): Decided {
  return {
    callStatus: "EXPIRED",
    handoffStatus: "EXPIRED",
    decision: "expired",
    review: { decision: "expired" },
    audit: "handoff.expired",
    result: {
      error_category: "business_rule",
      is_retryable: false,
      message:
        "The approval request expired without a decision. Nothing was done. This is not a denial: tell the customer a person will follow up.",
      review: { decision: "expired" },
    },
  };
}

/** The API token a decision came through, for its audit record (nothing when a person decided in the console). */
function viaOf(who: { via?: DecisionVia }): { via?: DecisionVia } {
  return who.via ? { via: who.via } : {};
}

/**
 * Writes a decision in ONE statement: the approval (by a person), the handoff, the call, the audit record, the event
 * and the webhook — and, when no other call of the run is still parked, the run back to RUNNING, leased to the
 * decider (the snapshot of this statement sees every other decision on the run: they were serialised on its row).
 */
async function writeDecision(
  tx: Store,
  h: LockedHandoff,
  who: { actor: string; staffId?: string; via?: DecisionVia },
  d: Decided,
  claim?: LeaseClaim,
): Promise<DecisionOutcome> {
  assertToolCallTransition("PARKED", d.callStatus);
  const s = Statement.plain();
  if (who.staffId && d.callStatus === "APPROVED") {
    s.insert("approval", "HandoffApproval", { id: randomUUID(), handoffId: h.id, staffId: who.staffId, version: h.version });
  }
  updateHandoff(s, "handoff", h, {
    status: d.handoffStatus,
    decision: d.decision,
    decidedById: who.staffId ?? null,
    decidedAt: new Date(),
    decisionReason: d.reason ?? null,
    claimedById: null,
    claimExpiresAt: null,
    ...(d.handoffStatus === "EDITED" ? { editedInput: json(d.executed), amountCents: d.amountCents ?? null } : {}),
  });
  if (h.toolCallId) {
    s.update(
      "call",
      "ToolCall",
      {
        status: sql`${d.callStatus}::"ToolCallStatus"`,
        review: json(d.review),
        decidedById: who.staffId ?? null,
        ...(d.executed ? { effectiveInput: json(d.executed), idempotencyKey: d.key ?? null } : {}),
        ...(d.result ? { result: json(d.result), isError: true } : {}),
        updatedAt: sql`now()`,
      },
      sql<boolean>`"ToolCall".id = ${h.toolCallId} AND "ToolCall".status = 'PARKED'`,
    );
  }
  addAudit(s, "audit", {
    tenantId: h.tenantId,
    runId: h.runId,
    actor: who.actor,
    action: d.audit,
    subject: h.id,
    data: { ...d.review, ...viaOf(who) },
  });
  addEvent(s, "ev", {
    tenantId: h.tenantId,
    conversationId: h.conversationId,
    type: "handoff.updated",
    data: { handoffId: h.id, status: d.handoffStatus },
  });
  addWebhookEvent(s, "wh", {
    tenantId: h.tenantId,
    type: "handoff.decided",
    payload: {
      handoffId: h.id,
      runId: h.runId,
      conversationId: h.conversationId,
      status: d.handoffStatus,
      review: d.review,
      decidedBy: who.actor,
    },
  });
  const lease: Lease | null = claim && h.runId ? { runId: h.runId, owner: claim.workerId, ms: claim.leaseMs } : null;
  if (h.runId && h.runPhase === "WAITING_FOR_APPROVAL") {
    assertRunTransition("WAITING_FOR_APPROVAL", "RUNNING");
    s.update(
      "resumed",
      "Run",
      {
        phase: sql`'RUNNING'::"RunPhase"`,
        updatedAt: sql`now()`,
        leaseOwner: lease?.owner ?? null,
        leaseExpiresAt: lease ? sql`now() + make_interval(secs => ${lease.ms / 1000}::float8)` : null,
      },
      sql<boolean>`"Run".id = ${h.runId} AND "Run".phase = 'WAITING_FOR_APPROVAL'
        AND NOT EXISTS (SELECT 1 FROM "ToolCall" c WHERE c."runId" = ${h.runId} AND c.status = 'PARKED' AND c.id <> ${h.toolCallId ?? ""})`,
      { returning: sql`"Run".id` },
    );
    s.insert(
      "resumed_ev",
      "Event",
      {
        tenantId: h.tenantId,
        conversationId: h.conversationId,
        type: "run.phase",
        data: sql`jsonb_build_object('runId', resumed.id, 'phase', 'RUNNING')`,
      },
      { from: ["resumed"] },
    );
  }
  // A decider who continues the run gets its state with the decision (the snapshot's counters are the run's: a
  // waiting run changes nothing else), and its transcript and last calls read right behind the COMMIT, so the advance
  // that follows reads nothing first. The decision is its transaction's last statement: COMMIT goes with it (every
  // caller returns what this returns, and nothing after).
  const kind = d.callStatus === "APPROVED" ? "approved" : d.callStatus === "DENIED" ? "denied" : "expired";
  type Row = { resumed: boolean } & Partial<RunStateRow>;
  if (!s.has("resumed") || !lease) {
    const row = await s.runThenCommit<Row>(tx, s.has("resumed") ? sql`EXISTS (SELECT 1 FROM resumed) AS resumed` : sql`false AS resumed`);
    return { kind, runId: h.runId!, handoffId: h.id, resumable: !!row?.resumed, resumedWith: null };
  }
  const transcript = transcriptRead(tx, h.conversationId);
  const sent = await s.runThenCommitAndRead<Row>(tx, sql`EXISTS (SELECT 1 FROM resumed) AS resumed, ${runStateOf(h.runId!)}`, [
    transcript.query,
    callsOfLatestMessageRead(tx, h.runId!),
  ]);
  const [rows, calls] = sent.reads;
  const { resumed, ...state } = sent.row ?? { resumed: false };
  const resumedWith: ResumedWith | null =
    resumed && "id" in state
      ? {
          run: { ...state, phase: "RUNNING" } as RunStateRow,
          transcript: rows ? transcript.take(rows as unknown as TranscriptRow[]) : null,
          recordedCalls: calls ? latestMessageCalls(calls as unknown as ToolCallRow[]) : undefined,
        }
      : null;
  return { kind, runId: h.runId!, handoffId: h.id, resumable: !!resumed, resumedWith };
}

/** An edit goes through the gates again, with the reviewer's authority in place of the approval band. */
async function regateEdit(
  tx: Store,
  h: LockedHandoff,
  call: { name: string; input: unknown; createdAt: Date; toolUseId: string },
  staff: { id: string; name: string; authorityLimitCents: number | null },
  editedInput: unknown,
) {
  const tool = getTool(call.name);
  if (!tool) throw new AppError("INVALID_INPUT", `Unknown tool ${call.name}.`);
  if (!editedInput) throw new AppError("INVALID_INPUT", "An edit needs the new arguments.");
  const parsed = tool.inputSchema.safeParse(editedInput);
  if (!parsed.success) {
    throw new AppError(
      "INVALID_INPUT",
      `Invalid arguments: ${parsed.error.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; ")}`,
    );
  }
  const input = parsed.data as Record<string, unknown>;
  const original = call.input as Record<string, unknown>;
  if (typeof original.order_number === "string" && String(input.order_number ?? "").toUpperCase() !== original.order_number.toUpperCase()) {
    throw new AppError("INVALID_INPUT", "An edit may change the terms, not which order it applies to.");
  }
  // Judged under the policy its run started with, as the approval itself is: a version published since applies to
  // runs that start after it.
  const run = h.runId ? await tx.selectFrom("Run").select("policyVersion").where("id", "=", h.runId).executeTakeFirst() : undefined;
  const policy = await loadPolicy(tx, h.tenantId, run?.policyVersion);
  // The parked call itself is not counted in the totals its edit is judged on.
  const facts = await tool.facts(input, { db: tx, tenantId: h.tenantId, policy, callId: h.toolCallId ?? undefined });
  const conversation = await readVerification(tx, h.conversationId);
  // The customer's identity was checked when the call was proposed; the edit is judged as of then.
  const gateInput = knownToolGateInput(
    tool,
    input,
    facts,
    {
      verifiedCustomerId: conversation.verifiedCustomerId,
      verificationExpiresAt: null,
      verificationLevel: conversation.verificationLevel,
      now: call.createdAt,
      previousCall: null,
    },
    policy,
  );
  const { verdict, records } = evaluateGates({
    ...gateInput,
    reviewer: { id: staff.id, name: staff.name, authorityLimitCents: staff.authorityLimitCents },
  });
  // How many people the edited call needs, by the approval bands anyone's call is held to (the reviewer's own
  // evaluation above bounds it by their authority instead).
  const band = evaluateGates(gateInput).verdict;
  const requiredApprovals = band.decision === "ask" ? (band.requiredApprovals ?? 1) : 1;
  const s = Statement.plain();
  s.insertRecords(
    "gates",
    "GateDecision",
    records.map((r) => ({ gate: r.gate, decision: r.decision, reason: r.reason })),
    { gate: "text", decision: '"GateOutcome"', reason: "text" },
    {
      id: sql`gen_random_uuid()::text`,
      tenantId: h.tenantId,
      runId: h.runId!,
      toolCallId: h.toolCallId,
      toolUseId: call.toolUseId,
      policyVersion: policy.version,
      actor: staff.id,
    },
  );
  await s.run(tx);
  if (verdict.decision === "deny") {
    throw new AppError(
      verdict.errorCategory === "permission" && /authority/.test(verdict.reason) ? "OVER_AUTHORITY" : "GATE_DENIED",
      verdict.reason,
    );
  }
  return { input, amountCents: facts.amountCents, requiredApprovals };
}

/** Approvals whose expiry failed for a reason of their own, waiting for their next try (lib/backoff). */
export const expiryRetries = processBackoff("approval-expiry");

/**
 * Expires every approval past its TTL (its own outcome, told to the model as "expired", never as "denied"); the runs
 * that no longer wait for anything are resumed due and unleased, and go on in the workers' slots like any due run —
 * an expiry pass decides, and never waits for a model (50 expiries in a row once held a worker for 50 model calls).
 * An approval whose expiry fails for a reason of its own is logged and left pending for a later try (`expiryRetries`);
 * the others go on. Returns the handoffs expired.
 */
export async function expireDueApprovals(runtime: RuntimeDeps, now = new Date()): Promise<string[]> {
  const due = await dueApprovalExpiries(storeOf(runtime.db), now, { skip: expiryRetries.waiting(now.getTime()) });
  expiryRetries.forgetAllBut(new Set(due.map((d) => d.id)), now.getTime());
  const expired: string[] = [];
  const failures = new FailuresOfAPass("handoffId", {
    one: "expiring an approval failed; it stays pending and is tried again later",
    many: (n) => `expiring ${n} approvals failed alike; they stay pending and are tried again later`,
  });
  try {
    for (const d of due) {
      try {
        await resumeRun(runtime, { tenantId: d.tenantId, expiry: true }, { handoffId: d.id, decision: "expire" }, { continueHere: false });
        expired.push(d.id);
        expiryRetries.settled(d.id);
      } catch (err) {
        if (err instanceof AppError) {
          expiryRetries.settled(d.id); // decided meanwhile: nothing to do
          continue;
        }
        if (connectivityFailureKind(err)) throw err; // the database, not this approval: the pass fails, told once
        // This approval's own failure: the others still expire; it stays pending and is tried again later.
        failures.add(err, { handoffId: d.id, tenantId: d.tenantId, ...expiryRetries.failed(d.id, Date.now()) });
      }
    }
  } finally {
    failures.log((fields, msg) => log.error(fields, msg));
  }
  return expired;
}
