import type { Transaction } from "kysely";
import type { DB } from "@/lib/db/kysely";
import { recordedOutcome, recordEffect } from "@/lib/store/effects";
import { withSpan } from "@/lib/telemetry/tracing";
import { takeFault } from "./faults";

/** A failure of the provider that may succeed on retry with the same idempotency key. */
export class ProviderTransientError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProviderTransientError";
  }
}

/**
 * The provider performed the effect but its answer was lost (a timeout after it committed). The effect and its
 * records stay; the caller must treat the call as transiently failed and retry under the same key, which then
 * returns the recorded outcome.
 */
export class ProviderAnswerLostError extends ProviderTransientError {
  constructor(message: string) {
    super(message);
    this.name = "ProviderAnswerLostError";
  }
}

export interface EffectRequest {
  tenantId: string;
  idempotencyKey: string;
  operation: string; // the tool name
  request: unknown;
  ledger: { runId: string; toolCallId: string };
}

/**
 * The payments/fulfilment boundary. Behaves like a payment provider's idempotency keys: the first call with a key
 * performs the effect; any later call with the same key returns the recorded outcome and does nothing. The effect,
 * the provider's record, the effect-ledger row and the audit record are written in the caller's transaction (the
 * runtime's, fenced by the run's lease), so a crash leaves either all of them or none.
 */
export function performEffect<T extends Record<string, unknown>>(
  tx: Transaction<DB>,
  req: EffectRequest,
  effect: (tx: Transaction<DB>) => Promise<T>,
  /** the outcome recorded under the key, already read in this transaction (null: none); undefined: read it here */
  known?: Record<string, unknown> | null,
): Promise<{ outcome: T; replayed: boolean }> {
  const attributes = {
    "tenant.id": req.tenantId,
    "run.id": req.ledger.runId,
    "tool.name": req.operation,
    "tool_call.id": req.ledger.toolCallId,
  };
  return withSpan("effect.perform", attributes, () => performEffectInSpan(tx, req, effect, known));
}

async function performEffectInSpan<T extends Record<string, unknown>>(
  tx: Transaction<DB>,
  req: EffectRequest,
  effect: (tx: Transaction<DB>) => Promise<T>,
  known: Record<string, unknown> | null | undefined,
): Promise<{ outcome: T; replayed: boolean }> {
  if (takeFault(req.operation, "transient")) {
    throw new ProviderTransientError(`${req.operation}: the provider is temporarily unavailable`);
  }
  const recorded = known !== undefined ? known : await recordedOutcome(tx, req.tenantId, req.idempotencyKey);
  if (recorded) return { outcome: recorded as T, replayed: true };
  const outcome = await effect(tx);
  await recordEffect(tx, {
    tenantId: req.tenantId,
    runId: req.ledger.runId,
    toolCallId: req.ledger.toolCallId,
    operation: req.operation,
    idempotencyKey: req.idempotencyKey,
    request: req.request,
    outcome,
  });
  if (takeFault(req.operation, "timeout_after_commit")) {
    throw new ProviderAnswerLostError(`${req.operation}: the provider timed out (the effect may have happened)`);
  }
  return { outcome, replayed: false };
}
