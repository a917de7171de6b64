// Gates before a tool runs (DESIGN §2.2): each proposed call is validated against its schema, the facts the gates
// need are read, every gate runs, and precedence decides (deny > defer > ask > allow). Nothing is written here: the
// caller records the calls with their decisions in the statement of its step.
import { randomUUID } from "node:crypto";
import type Anthropic from "@anthropic-ai/sdk";
import type { Store } from "@/lib/db/kysely";
import { takeFault } from "@/lib/commerce/faults";
import { evaluateGates, type GateEvaluation } from "@/lib/gates/evaluate";
import type { Gate, GateInput } from "@/lib/gates/types";
import type { Policy } from "@/lib/policy/policy";
import type { ToolCallStatus } from "@/lib/store/phases";
import type { NewToolCall } from "@/lib/store/tool-calls";
import type { ContentBlock, TranscriptRow } from "@/lib/store/transcript";
import { getTool } from "@/lib/tools/registry";
import type { CallFacts, ToolDefinition, ToolErrorBody } from "@/lib/tools/types";
import { canonicalJson, idempotencyKey } from "./idempotency";
import { backoffMs } from "./retry";
import type { RunRef, Verification } from "./run-state";
import { setting } from "@/lib/env";
import { log } from "@/lib/log";

export interface ToolUse {
  id: string;
  name: string;
  input: unknown;
}

export type { Verification };

/** The conversation's verification as it is now (gates check it; execution binds it). */
export async function readVerification(db: Store, conversationId: string): Promise<Verification> {
  const row = await db
    .selectFrom("Conversation")
    .select(["verifiedCustomerId", "verificationExpiresAt", "verificationLevel"])
    .where("id", "=", conversationId)
    .executeTakeFirst();
  if (!row) throw new Error(`conversation ${conversationId} not found`);
  return row;
}

export interface GateContext {
  run: RunRef;
  policy: Policy;
  /** The conversation's verification; may still be in flight (read alongside the gates' own reads). */
  conversation: Verification | Promise<Verification>;
  previousCall: { name: string; canonicalInput: string } | null;
  now: Date;
}

function errorResult(
  category: ToolErrorBody["error_category"],
  message: string,
  retryable: boolean,
  extra: Record<string, unknown> = {},
): ToolErrorBody {
  return { error_category: category, is_retryable: retryable, message, ...extra };
}

/** A proposed call as the gates decided it (not yet written; see lib/store/tool-calls `addToolCalls`). */
export interface GatedCall extends NewToolCall {
  use: ToolUse;
  /** The row a lookup's gates read, for the call to answer from if it runs in this advance (never stored). */
  gatesRead?: unknown;
  /** What a person must see: an approval for a parked call, an escalation for a deny above the ceiling. */
  handoff:
    | null
    | { kind: "approval"; facts: CallFacts; verdict: GateEvaluation["verdict"] }
    | { kind: "escalation"; facts: CallFacts; reason: string };
}

/** The gates' input for a call of a known tool, judged apart from its turn (an edit, a call judged again where it acts). */
export function knownToolGateInput(
  tool: Pick<ToolDefinition, "name" | "accountAction" | "sideEffect">,
  input: Record<string, unknown>,
  facts: CallFacts,
  state: GateInput["state"],
  policy: Policy,
): GateInput {
  const { name: toolName, accountAction, sideEffect } = tool;
  return { toolName, input, canonicalInput: canonicalJson(input), facts, isKnownTool: true, accountAction, sideEffect, state, policy };
}

/** A call refused above the policy ceiling: a person is asked to look (lib/runtime/end `openCeilingEscalation`). */
export const escalates = (g: GatedCall): g is GatedCall & { handoff: { kind: "escalation" } } => g.handoff?.kind === "escalation";

/** A proposed call, validated and with the facts the gates need — or refused before any gate. */
type Prepared =
  | { kind: "refused"; call: GatedCall }
  | {
      kind: "ready";
      id: string;
      use: ToolUse;
      position: number;
      attempts: number;
      input: Record<string, unknown>;
      /** null: the facts could not be read (the call is deferred — a gate never judges without them) */
      facts: CallFacts | null;
      /** what `factsWithRead` read besides the facts (undefined: the tool has none) */
      read?: unknown;
      previousCall: GateContext["previousCall"];
    };

/** Validates a proposed call and reads its facts (a failing read is remembered, never ignored). */
async function prepareCall(
  db: Store,
  ctx: GateContext,
  use: ToolUse,
  position: number,
  prior: { id?: string; attempts?: number } = {},
): Promise<Prepared> {
  const tool = getTool(use.name);
  const id = prior.id ?? randomUUID();
  const attempts = prior.attempts ?? 0;
  // Input that does not match the schema never reaches a gate or a tool: the model gets the validation errors.
  const parsed = tool ? tool.inputSchema.safeParse(use.input) : null;
  if (tool && parsed && !parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "input"}: ${i.message}`).join("; ");
    return {
      kind: "refused",
      call: {
        id,
        toolUseId: use.id,
        name: use.name,
        input: use.input ?? {},
        use,
        position,
        attempts,
        status: "DENIED",
        decision: "deny",
        reason: `invalid input: ${issues}`,
        effectiveInput: null,
        idempotencyKey: null,
        nextAttemptAt: null,
        isError: true,
        handoff: null,
        gateFacts: null,
        result: errorResult("business_rule", `Invalid arguments for ${use.name}: ${issues}. Fix them and call again.`, true),
        records: [{ gate: "input_schema", decision: "deny", reason: issues }],
      },
    };
  }
  const input = (parsed?.success ? parsed.data : (use.input ?? {})) as Record<string, unknown>;
  let facts: CallFacts | null = { summary: use.name };
  let read: unknown;
  try {
    if (takeFault(use.name, "facts_unavailable")) throw new Error(`the facts of ${use.name} could not be read (injected)`);
    const fctx = { db, tenantId: ctx.run.tenantId, policy: ctx.policy, callId: id };
    if (tool?.factsWithRead) ({ facts, read } = await tool.factsWithRead(input, fctx));
    else if (tool) facts = await tool.facts(input, fctx);
  } catch (err) {
    // Fail closed: without its facts no gate may clear the call.
    log.warn({ err, tool: use.name }, "the facts for the gates could not be read; the call is deferred");
    facts = null;
    read = undefined;
  }
  return { kind: "ready", id, use, position, attempts, input, facts, read, previousCall: ctx.previousCall };
}

/**
 * Runs every gate on a prepared call; writes nothing. allow → APPROVED (to run); ask → PARKED for an approval;
 * deny → DENIED with a structured error result (above the refund ceiling, with an escalation the caller opens);
 * defer → DEFERRED (gated again later). Facts that could not be read defer the call with backoff; when that keeps
 * happening it is refused as exhausted (the run then goes to a person).
 */
function judgeCall(
  ctx: GateContext,
  conversation: Verification,
  p: Extract<Prepared, { kind: "ready" }>,
  gates?: readonly Gate[],
): GatedCall {
  const tool = getTool(p.use.name);
  const base = { id: p.id, toolUseId: p.use.id, name: p.use.name, input: p.use.input ?? {}, use: p.use, position: p.position };
  if (!p.facts) {
    const attempts = p.attempts + 1;
    const exhausted = attempts >= ctx.policy.rules.budgets.maxToolAttempts;
    const reason = "The facts this call is judged on (the order, its totals) could not be read.";
    return {
      ...base,
      attempts,
      status: exhausted ? "DENIED" : "DEFERRED",
      decision: exhausted ? "deny" : "defer",
      reason: `facts_unavailable: ${reason}`,
      effectiveInput: p.input,
      idempotencyKey: null,
      nextAttemptAt: exhausted ? null : new Date(ctx.now.getTime() + backoffMs(attempts)),
      isError: exhausted,
      handoff: null,
      gateFacts: null,
      result: exhausted
        ? errorResult("transient", `${reason} Tried ${attempts} times; nothing was done. A person will follow up.`, false, {
            exhausted: true,
          })
        : null,
      records: [{ gate: "facts_unavailable", decision: exhausted ? "deny" : "defer", reason }],
    };
  }
  const facts = p.facts;
  const evaluation: GateEvaluation = evaluateGates(
    {
      toolName: p.use.name,
      input: p.input,
      canonicalInput: canonicalJson(p.input),
      facts,
      isKnownTool: !!tool,
      accountAction: tool?.accountAction ?? true,
      sideEffect: tool?.sideEffect ?? true,
      state: {
        verifiedCustomerId: conversation.verifiedCustomerId,
        verificationExpiresAt: conversation.verificationExpiresAt,
        verificationLevel: conversation.verificationLevel,
        now: ctx.now,
        previousCall: p.previousCall,
      },
      policy: ctx.policy,
    },
    gates,
  );
  const { verdict } = evaluation;
  const status: ToolCallStatus =
    verdict.decision === "allow"
      ? "APPROVED"
      : verdict.decision === "ask"
        ? "PARKED"
        : verdict.decision === "defer"
          ? "DEFERRED"
          : "DENIED";
  const escalate = verdict.decision === "deny" && !!verdict.escalate;
  return {
    ...base,
    attempts: p.attempts,
    status,
    decision: verdict.decision,
    reason: `${verdict.gate}: ${verdict.reason}`,
    effectiveInput: p.input,
    idempotencyKey: tool?.sideEffect
      ? idempotencyKey({ tenantId: ctx.run.tenantId, runId: ctx.run.id, toolUseId: p.use.id, toolName: p.use.name, input: p.input })
      : null,
    // defer: the call is gated again later (the run waits for a retry), not answered now.
    nextAttemptAt: verdict.decision === "defer" ? new Date(ctx.now.getTime() + setting("SUPPORT_DEFER_MS")) : null,
    isError: verdict.decision === "deny",
    result:
      verdict.decision === "deny"
        ? errorResult(verdict.errorCategory ?? "permission", verdict.reason, !escalate && (verdict.retryable ?? false), {
            gate: verdict.gate,
            ...verdict.details,
          })
        : null,
    records: evaluation.records.map((r) => ({ gate: r.gate, decision: r.decision, reason: r.reason })),
    gateFacts: facts,
    gatesRead: p.read,
    handoff:
      verdict.decision === "ask"
        ? { kind: "approval", facts, verdict }
        : escalate
          ? { kind: "escalation", facts, reason: verdict.reason }
          : null,
  };
}

/**
 * Money limits apply to totals, so the calls of one model turn count against each other: each money call sees what
 * the others ask on the same order (and, for the customer's automatic limits, for the same customer). Parallel calls
 * cannot split a band.
 */
function addSameTurnTotals(prepared: Prepared[], unsaved: readonly UnsavedMoneyCall[] = []): void {
  const money = prepared.filter(
    (p): p is Extract<Prepared, { kind: "ready" }> & { facts: CallFacts } =>
      p.kind === "ready" && !!p.facts?.totals && p.facts.amountCents !== undefined,
  );
  for (const p of money) {
    const others = [...money.filter((o) => o !== p && o.use.name === p.use.name), ...unsaved.filter((o) => o.name === p.use.name)];
    const sameOrder = others
      .filter((o) => o.facts.orderNumber === p.facts.orderNumber)
      .reduce((sum, o) => sum + (o.facts.amountCents ?? 0), 0);
    const sameCustomer = others
      .filter((o) => o.facts.customerId && o.facts.customerId === p.facts.customerId)
      .reduce((sum, o) => sum + (o.facts.amountCents ?? 0), 0);
    p.facts = {
      ...p.facts,
      totals: {
        ...p.facts.totals!,
        sameTurnCents: sameOrder,
        customerPendingAutoCents: p.facts.totals!.customerPendingAutoCents + sameCustomer,
      },
    };
  }
}

/**
 * A money call gated earlier in the same tool phase whose row is not written yet (a specialist's call waits for the
 * phase's write): it counts as a call of the same turn, or a specialist run after another would not see it.
 */
export interface UnsavedMoneyCall {
  name: string;
  facts: CallFacts;
  /** the specialist scope that gated it (its entries go once that specialist's step is written) */
  owner: string;
}

/** The money calls of `gated` a later gate must count (not refused): to keep while their rows are not written. */
export function unsavedMoneyOf(gated: GatedCall[], owner: string): UnsavedMoneyCall[] {
  return gated.flatMap((g) => {
    const facts = g.gateFacts as CallFacts | null;
    if (g.status === "DENIED" || !facts?.totals || facts.amountCents === undefined) return [];
    return [{ name: g.name, facts, owner }];
  });
}

/**
 * Gates the tool_use blocks of an assistant message that are not in `known` (reading what they need; the
 * conversation's verification is read alongside). `messageSeq`: the message's seq, for the call before it
 * (identical-call detection) — Infinity when it is not in `rows` yet. `prior`: calls gated again (a deferred
 * call keeps its id and its attempts).
 */
export async function gateCalls(
  db: Store,
  a: {
    run: RunRef;
    policy: Policy;
    rows: TranscriptRow[];
    messageSeq: number;
    uses: Anthropic.ToolUseBlockParam[];
    known: Array<{ toolUseId: string }>;
    gates?: readonly Gate[];
    prior?: Map<string, { id: string; attempts: number }>;
    /** money calls of the same tool phase not written yet (see UnsavedMoneyCall) */
    unsaved?: readonly UnsavedMoneyCall[];
    /** the conversation's verification as the advance knows it (RunState `verification`); otherwise it is read */
    verification?: Verification | null;
    /** the call before these when it is not in `rows` (a specialist's own turn: lib/runtime/agent-as-tool) */
    previousCall?: { name: string; input: unknown } | null;
  },
): Promise<{ verification: Verification; gated: GatedCall[] }> {
  // Known, or read alongside what the calls read (one round trip, not two).
  const verification = a.verification ? Promise.resolve(a.verification) : readVerification(db, a.run.conversationId);
  verification.catch(() => undefined); // awaited below; a failing read must not leave it unhandled
  const ctx: GateContext = {
    run: a.run,
    policy: a.policy,
    conversation: verification,
    previousCall: a.previousCall
      ? { name: a.previousCall.name, canonicalInput: canonicalJson(a.previousCall.input ?? {}) }
      : previousToolUse(a.rows, a.run, a.messageSeq),
    now: new Date(),
  };
  const pending: Array<Promise<Prepared>> = [];
  for (const [position, use] of a.uses.entries()) {
    if (!a.known.some((c) => c.toolUseId === use.id)) {
      pending.push(prepareCall(db, { ...ctx }, { id: use.id, name: use.name, input: use.input }, position, a.prior?.get(use.id)));
    }
    ctx.previousCall = { name: use.name, canonicalInput: canonicalJson(use.input ?? {}) };
  }
  const prepared = await Promise.all(pending);
  addSameTurnTotals(prepared, a.unsaved);
  const conversation = await verification;
  return {
    verification: conversation,
    gated: prepared.map((p) => (p.kind === "refused" ? p.call : judgeCall(ctx, conversation, p, a.gates))),
  };
}

/** The tool call of this run just before this message (from the transcript), for identical-call detection. */
function previousToolUse(rows: TranscriptRow[], run: RunRef, beforeSeq: number): { name: string; canonicalInput: string } | null {
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i]!;
    if (row.seq >= beforeSeq || row.role !== "assistant" || row.runId !== run.id) continue;
    const uses = (row.content as ContentBlock[]).filter((b): b is Anthropic.ToolUseBlockParam => b.type === "tool_use");
    const last = uses[uses.length - 1];
    if (last) return { name: last.name, canonicalInput: canonicalJson(last.input ?? {}) };
  }
  return null;
}
