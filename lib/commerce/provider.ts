import type { PrismaClient, PrismaTx, Json } from "@/lib/db/prisma-types";
import { Prisma } from "@/lib/db/prisma-types";
import { takeFault } from "./faults";

/** A failure of the provider that may succeed on retry with the same idempotency key. */
export class ProviderTransientError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProviderTransientError";
  }
}

export interface EffectRequest {
  tenantId: string;
  idempotencyKey: string;
  operation: string; // the tool name
  request: Json;
  ledger: { runId: string; toolCallId: string };
}

/**
 * The payments/fulfilment boundary. Behaves like a payment provider's idempotency keys: the first call with a
 * key performs the effect; any later call with the same key returns the recorded outcome and does nothing.
 * The effect, the provider's record, the effect-ledger row and the audit event commit in ONE transaction, so a
 * crash leaves either all of them or none.
 */
export async function performEffect<T extends Record<string, unknown>>(
  db: PrismaClient | PrismaTx,
  req: EffectRequest,
  effect: (tx: PrismaTx) => Promise<T>,
): Promise<{ outcome: T; replayed: boolean }> {
  if (takeFault(req.operation, "transient")) {
    throw new ProviderTransientError(`${req.operation}: the provider is temporarily unavailable`);
  }
  const run = async (tx: PrismaTx) => {
    const recorded = await tx.providerRequest.findUnique({
      where: { tenantId_idempotencyKey: { tenantId: req.tenantId, idempotencyKey: req.idempotencyKey } },
    });
    if (recorded) return { outcome: recorded.response as T, replayed: true };
    const outcome = await effect(tx);
    await tx.providerRequest.create({
      data: { tenantId: req.tenantId, idempotencyKey: req.idempotencyKey, operation: req.operation, request: req.request, response: outcome as Json },
    });
    await tx.effectLedger.create({
      data: {
        tenantId: req.tenantId,
        runId: req.ledger.runId,
        toolCallId: req.ledger.toolCallId,
        toolName: req.operation,
        idempotencyKey: req.idempotencyKey,
        input: req.request,
        outcome: outcome as Json,
      },
    });
    // The audit record of every side effect is written here, by code, never left to the model.
    await tx.auditEvent.create({
      data: { tenantId: req.tenantId, runId: req.ledger.runId, actor: "agent", action: `effect.${req.operation}`, subject: req.idempotencyKey, data: { request: req.request, outcome: outcome as Json } },
    });
    return { outcome, replayed: false };
  };

  let result: { outcome: T; replayed: boolean };
  try {
    result = "$transaction" in db ? await (db as PrismaClient).$transaction(run) : await run(db);
  } catch (err) {
    // Two workers raced on one key: the loser's transaction rolled back whole; read the winner's outcome.
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === "P2002") {
      const recorded = await db.providerRequest.findUnique({
        where: { tenantId_idempotencyKey: { tenantId: req.tenantId, idempotencyKey: req.idempotencyKey } },
      });
      if (recorded) return { outcome: recorded.response as T, replayed: true };
    }
    throw err;
  }
  if (!result.replayed && takeFault(req.operation, "timeout_after_commit")) {
    throw new ProviderTransientError(`${req.operation}: the provider timed out (the effect may have happened)`);
  }
  return result;
}
