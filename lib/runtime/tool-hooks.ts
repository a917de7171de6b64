import { randomUUID } from "node:crypto";
import { Prisma } from "@/lib/db/prisma-types";
import { sqlOf, type Db } from "@/lib/db/sql";
import type { Policy } from "@/lib/policy/policy";

const SECRET_KEYS = /(password|secret|token|api[_-]?key|card_?number|cvc)/i;
const CARD_NUMBER = /\b(?:\d[ -]?){13,19}\b/g;

/** Removes secrets from what the model reads: secret-looking keys dropped, card-like numbers masked. */
export function redact(value: unknown): unknown {
  if (typeof value === "string") return value.replace(CARD_NUMBER, (m) => `****${m.replace(/\D/g, "").slice(-4)}`);
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).filter(([k]) => !SECRET_KEYS.test(k)).map(([k, v]) => [k, redact(v)]));
  }
  return value;
}

/** Whether a successful result teaches the run something that must be persisted with it. */
export function needsPersisting(toolName: string, result: Record<string, unknown>): boolean {
  return toolName === "verify_customer" && result.status === "verified" && typeof result.customer_id === "string";
}

/**
 * Runs after a tool succeeded, in the transaction that records its result: persists what the run learned — a
 * verified identity, scoped to that customer, with an expiry — so every later gate sees it.
 */
export async function persistLearned(
  tx: Db,
  a: { run: { id: string; tenantId: string; conversationId: string }; call: { name: string }; result: Record<string, unknown>; policy: Policy },
): Promise<void> {
  if (needsPersisting(a.call.name, a.result)) {
    const now = new Date();
    const customerId = a.result.customer_id as string;
    const expiresAt = new Date(now.getTime() + a.policy.rules.verificationTtlMinutes * 60_000);
    await sqlOf(tx).execute(Prisma.sql`
      WITH c AS (
        UPDATE "Conversation" SET "verifiedCustomerId" = ${customerId}, "verifiedAt" = ${now}, "verificationExpiresAt" = ${expiresAt}, "updatedAt" = now()
        WHERE id = ${a.run.conversationId}
      )
      INSERT INTO "AuditEvent" (id, "tenantId", "runId", actor, action, subject, data)
      VALUES (${randomUUID()}, ${a.run.tenantId}, ${a.run.id}, 'harness', 'customer.verified', ${customerId}, '{}'::jsonb)`);
  }
}
