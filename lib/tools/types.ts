import type { Db } from "@/lib/db/sql";
import type { z } from "zod";
import type { PrismaTx } from "@/lib/db/prisma-types";

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

/** What a tool's execution sees: durable identifiers only, never in-memory run state. */
export interface ToolContext {
  db: PrismaTx;
  tenantId: string;
  conversationId: string;
  runId: string;
  toolCallId: string;
  /** Present for side-effecting tools: derived from (tenant, run, tool_use id, canonical input). */
  idempotencyKey: string;
  /** The customer this conversation is verified as (checked again by the tool, not only by the gate). */
  verifiedCustomerId: string | null;
}

/** Facts a gate or a handoff record needs about a proposed call, derived from its input and the data. */
export interface CallFacts {
  orderNumber?: string;
  amountCents?: number;
  customerId?: string;
  orderStatus?: string;
  orderTotalCents?: number;
  refundableCents?: number;
  summary: string; // "Refund $250.00 on A-1002"
}

export interface ToolDefinition<I = any> {
  name: string;
  description: string;
  inputSchema: z.ZodType<I>;
  /** Side-effecting tools run under an idempotency key and write the effect ledger. */
  sideEffect: boolean;
  /** Account actions require a verified customer who owns the order. */
  accountAction: boolean;
  /**
   * Only reads (changes nothing, learns nothing the run must keep): running it again is harmless, so an allowed
   * call may run before it is recorded, and be recorded with its result in the same statement.
   */
  readOnly?: boolean;
  /** Reads what gates and handoff records need (order, amount) without acting. */
  facts(input: I, ctx: { db: Db; tenantId: string }): Promise<CallFacts>;
  execute(input: I, ctx: ToolContext): Promise<Record<string, unknown>>;
}

export function defineTool<I>(def: ToolDefinition<I>): ToolDefinition<I> {
  return def;
}
