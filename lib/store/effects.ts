// The effect ledger and the payment/fulfilment provider's idempotency record: one row each per side effect,
// written in the transaction that performs the effect (lib/commerce/provider), so a crash leaves all or none.
import { sql, type Transaction } from "kysely";
import { type DB, sendWithNext } from "@/lib/db/kysely";

type Tx = Transaction<DB>;

/**
 * `recordedOutcome` as a select-list item (`"recordedOutcome"`), for a statement the effect's transaction sends
 * anyway: its first, the lease renewal (lib/runtime/execution), saves the provider's own read a round trip.
 */
export function recordedOutcomeSql(tenantId: string, idempotencyKey: string) {
  return sql`(SELECT p.response FROM "ProviderRequest" p WHERE p."tenantId" = ${tenantId} AND p."idempotencyKey" = ${idempotencyKey}) AS "recordedOutcome"`;
}

/** The outcome recorded under an idempotency key, if the operation already happened. */
export async function recordedOutcome(tx: Tx, tenantId: string, idempotencyKey: string): Promise<Record<string, unknown> | null> {
  const row = await tx
    .selectFrom("ProviderRequest")
    .select("response")
    .where("tenantId", "=", tenantId)
    .where("idempotencyKey", "=", idempotencyKey)
    .executeTakeFirst();
  return (row?.response as Record<string, unknown> | undefined) ?? null;
}

export interface EffectRecord {
  tenantId: string;
  runId: string;
  toolCallId: string;
  operation: string;
  idempotencyKey: string;
  request: unknown;
  outcome: unknown;
}

/**
 * Records a performed effect: the provider's idempotency record, the ledger row and its audit record. Nothing waits
 * for their answer, so they go on the wire with the transaction's next statement (`sendWithNext`) — in the runtime,
 * the one that records the call's outcome and commits: one round trip fewer per effect, and still one commit.
 */
export async function recordEffect(tx: Tx, e: EffectRecord): Promise<void> {
  const request = JSON.stringify(e.request ?? {});
  const outcome = JSON.stringify(e.outcome ?? {});
  const write = tx
    .with("p", (db) =>
      db.insertInto("ProviderRequest").values({
        id: crypto.randomUUID(),
        tenantId: e.tenantId,
        idempotencyKey: e.idempotencyKey,
        operation: e.operation,
        request,
        response: outcome,
      }),
    )
    .with("l", (db) =>
      db.insertInto("EffectLedger").values({
        id: crypto.randomUUID(),
        tenantId: e.tenantId,
        runId: e.runId,
        toolCallId: e.toolCallId,
        toolName: e.operation,
        idempotencyKey: e.idempotencyKey,
        input: request,
        outcome,
      }),
    )
    .insertInto("AuditEvent")
    .values({
      id: crypto.randomUUID(),
      tenantId: e.tenantId,
      runId: e.runId,
      actor: "agent",
      action: `effect.${e.operation}`,
      subject: e.idempotencyKey,
      data: JSON.stringify({ request: e.request, outcome: e.outcome }),
    });
  await sendWithNext(tx, write);
}
