import type { Transaction } from "kysely";
import type { z } from "zod";
import type { DB, Store } from "@/lib/db/kysely";
import type { Sql } from "@/lib/store/statement";
import type { Policy } from "@/lib/policy/policy";
import type { VerificationLevel } from "@/lib/identity/levels";

/** Structured body of every failed tool_result (DESIGN §2.1). */
export type ErrorCategory = "transient" | "business_rule" | "permission" | "system";

export interface ToolErrorBody {
  error_category: ErrorCategory;
  is_retryable: boolean;
  message: string;
  [extra: string]: unknown;
}

/** Thrown by a tool's execute(); becomes an is_error tool_result with a structured body. */
export class ToolError extends Error {
  constructor(
    readonly category: ErrorCategory,
    message: string,
    readonly retryable = category === "transient",
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "ToolError";
  }

  toBody(): ToolErrorBody {
    return { error_category: this.category, is_retryable: this.retryable, message: this.message, ...this.extra };
  }
}

/** Where a tool reads and writes: the store (reads), or — for a side effect — the transaction of its effect. */
export type ToolDb = Store | Transaction<DB>;

/** What a tool's execution sees: durable identifiers only, never in-memory run state. */
export interface ToolContext {
  /**
   * A side-effecting tool runs inside the runtime's transaction fenced by the run's lease (its effect, the ledger
   * row and the call's outcome commit together); other tools read from the store.
   */
  db: ToolDb;
  tenantId: string;
  conversationId: string;
  runId: string;
  toolCallId: string;
  /** Present for side-effecting tools: derived from (tenant, run, tool_use id, canonical input). */
  idempotencyKey: string;
  /** The customer this conversation is verified as (checked again by the tool, not only by the gate). */
  verifiedCustomerId: string | null;
  /**
   * A side effect: what the provider recorded under `idempotencyKey` (null: nothing yet), read by its transaction's
   * first statement; undefined when not read (the provider then reads it itself).
   */
  recordedOutcome?: Record<string, unknown> | null;
  /**
   * A read-only tool with `factsWithRead`: the row its gates read, when the call runs in the advance that gated it
   * (undefined otherwise: the tool reads for itself).
   */
  gatesRead?: unknown;
  /**
   * A side effect with `effectRead`: what that read answered (JSON), taken with its row locks by the effect
   * transaction's first statement; undefined when not read (the tool reads for itself).
   */
  effectRead?: unknown;
  /** Work to do once the tool's transaction has committed (e.g. deliver a mail it queued). */
  afterCommit?: (work: () => Promise<void>) => void;
  /** The store, for that work (the transaction is gone by then). */
  store?: Store;
}

/** Facts a gate or a handoff record needs about a proposed call, derived from its input and the data. */
export interface CallFacts {
  orderNumber?: string;
  amountCents?: number;
  customerId?: string;
  orderStatus?: string;
  orderTotalCents?: number;
  refundableCents?: number;
  /** The verification level the call needs beyond "verified" (an address change: the postcode or a code). */
  requiredVerificationLevel?: VerificationLevel;
  /**
   * Money limits apply to totals (lib/policy): what this kind of action already did on the order, what is waiting
   * (parked or approved, not run yet), what other calls of the same model turn ask, and what was done automatically
   * for the customer within the policy's window.
   */
  totals?: MoneyTotals;
  summary: string; // "Refund $250.00 on A-1002"
}

export interface MoneyTotals {
  /** already done on the order (refunds: refunded so far; replacements: the value of those already sent) */
  orderDoneCents: number;
  /**
   * The other remedy already given for the order (a refund's: the value of replacements sent; a replacement's: what
   * was refunded): money back and the goods again is never automatic. Absent in facts recorded before it was read.
   */
  orderOtherRemedyCents?: number;
  /** parked or approved but not run yet, on the order (every conversation) */
  orderPendingCents: number;
  /** other calls of the same model turn on the same order */
  sameTurnCents: number;
  /** done automatically (no person approved it) for this customer within the window */
  customerAutoCents: number;
  /** automatic ones allowed but not run yet for the customer, and other calls of the same turn for them */
  customerPendingAutoCents: number;
  windowDays: number;
}

/** What a tool reads its facts with. */
export interface FactsContext {
  db: Store;
  tenantId: string;
  /** the policy the call is judged under (its windows) */
  policy: Policy;
  /** the call being judged (its own waiting row is not counted in the totals) */
  callId?: string;
  /**
   * "done": only what is done counts in the totals (nothing waiting, nothing of the same turn) — the facts an
   * automatic call is judged on again where it acts (lib/runtime/judged-again). Default "all".
   */
  counting?: "all" | "done";
}

export interface ToolDefinition<I = any> {
  name: string;
  description: string;
  inputSchema: z.ZodType<I>;
  /** Side-effecting tools run under an idempotency key and write the effect ledger. */
  sideEffect: boolean;
  /**
   * Writes state of its own (identity attempts, one-time codes): runs inside the runtime's transaction fenced by the
   * run's lease, like a side effect, so what it wrote commits with its outcome. Side effects always do.
   */
  transactional?: boolean;
  /** A specialist run as a tool (lib/agents/specialists): the runtime runs its own model turns instead of `execute`. */
  agent?: string;
  /** Account actions require a verified customer who owns the order. */
  accountAction: boolean;
  /**
   * Only reads (changes nothing, learns nothing the run must keep): running it again is harmless, so an allowed
   * call may run before it is recorded, and be recorded with its result in the same statement.
   */
  readOnly?: boolean;
  /**
   * The call hands the conversation to a person: when it succeeds, the runtime opens this escalation in the same
   * statement that records its result (and adds the handoff's id to the result).
   */
  escalation?: (input: I) => EscalationRequest;
  /** Reads what gates and handoff records need (order, amount) without acting. */
  facts(input: I, ctx: FactsContext): Promise<CallFacts>;
  /**
   * Its limits apply to totals that other conversations change (money: refunds, replacements): a call is judged again
   * in its effect's transaction on what is done by then (lib/runtime/judged-again) — two conversations at once cannot
   * each spend the same automatic allowance, nor two approvals together pass the ceiling.
   */
  limitedOnTotals?: boolean;
  /**
   * With `limitedOnTotals`: the call's facts as its effect's first read shows them (`effectRead`, under the order's row
   * lock), counting what is done on the order — a call a person approved is judged again on them, with no round trip
   * of its own. Absent: an approved call is not judged again (its tool has no ceiling).
   */
  lockedFacts?(input: I, effectRead: unknown, ctx: { policy: Policy }): CallFacts | null;
  /**
   * A read-only tool whose answer is the row its gates read (a lookup): reads the facts and that row in one statement,
   * in place of `facts`, when the call is gated. A call allowed and run in the same advance gets the row as
   * `ToolContext.gatesRead` and answers from it instead of reading it again; one run later reads for itself.
   */
  factsWithRead?(input: I, ctx: FactsContext): Promise<{ facts: CallFacts; read: unknown }>;
  /**
   * A side effect's first read, as an SQL expression of one JSON value (its row locks taken with `FOR UPDATE`): sent
   * in the effect transaction's first statement, the lease renewal, instead of in a round trip of its own. The tool
   * gets the answer as `ToolContext.effectRead` (under the same locks as if it had read it itself).
   */
  effectRead?(input: I, ctx: { tenantId: string }): Sql;
  execute(input: I, ctx: ToolContext): Promise<Record<string, unknown>>;
}

/** What a person must see when a call escalates: the handoff record's fields a tool can state. */
export interface EscalationRequest {
  trigger: string;
  asked?: string;
  tried?: string[];
  rootCause: string;
  recommendedAction: string;
  reason: string;
  orderNumber?: string | null;
  amountCents?: number | null;
}

export function defineTool<I>(def: ToolDefinition<I>): ToolDefinition<I> {
  // What the gates read is only as fresh as the gating: a tool that acts must read under its own transaction.
  if (def.factsWithRead && !def.readOnly) throw new Error(`${def.name}: only a read-only tool may answer from its gates' read`);
  if (def.effectRead && !def.sideEffect) throw new Error(`${def.name}: only a side effect reads in its transaction's first statement`);
  return def;
}
