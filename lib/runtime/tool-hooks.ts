import type { PrismaTx } from "@/lib/db/prisma-types";
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

/**
 * Runs after a tool succeeded, in the transaction that records its result: persists what the run learned
 * (a verified identity, scoped to that customer, with an expiry) and redacts what the model will read.
 */
export async function afterToolHooks(
  tx: PrismaTx,
  a: { run: { id: string; tenantId: string; conversationId: string }; call: { name: string }; result: Record<string, unknown>; policy: Policy },
): Promise<Record<string, unknown>> {
  if (a.call.name === "verify_customer" && a.result.status === "verified" && typeof a.result.customer_id === "string") {
    const now = new Date();
    await tx.conversation.update({
      where: { id: a.run.conversationId },
      data: { verifiedCustomerId: a.result.customer_id, verifiedAt: now, verificationExpiresAt: new Date(now.getTime() + a.policy.rules.verificationTtlMinutes * 60_000) },
    });
    await tx.auditEvent.create({ data: { tenantId: a.run.tenantId, runId: a.run.id, actor: "harness", action: "customer.verified", subject: a.result.customer_id, data: {} } });
  }
  return redact(a.result) as Record<string, unknown>;
}
