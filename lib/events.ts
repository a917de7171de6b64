import type { PrismaTx, Json } from "@/lib/db/prisma-types";

/**
 * Appends to the event feed that live views follow. Written in the same transaction as the change it
 * announces, so a reader resyncing from its cursor never misses one.
 */
export async function publishEvent(db: PrismaTx, e: { tenantId: string; conversationId?: string | null; type: string; data?: Json }) {
  await db.event.create({ data: { tenantId: e.tenantId, conversationId: e.conversationId ?? null, type: e.type, data: e.data ?? {} } });
}

/** Events after a cursor (exclusive), oldest first. A client keeps the last id it saw. */
export async function eventsSince(db: PrismaTx, scope: { tenantId: string; conversationId?: string }, cursor: bigint, limit = 200) {
  return db.event.findMany({
    where: { tenantId: scope.tenantId, ...(scope.conversationId ? { conversationId: scope.conversationId } : {}), id: { gt: cursor } },
    orderBy: { id: "asc" },
    take: limit,
  });
}
