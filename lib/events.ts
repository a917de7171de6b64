import { Prisma, type PrismaTx, type Json } from "@/lib/db/prisma-types";
import { sqlOf, type Db } from "@/lib/db/sql";

/**
 * Appends to the event feed that live views follow. Written in the same transaction as the change it
 * announces, so a reader resyncing from its cursor never misses one.
 */
export async function publishEvent(db: Db, e: { tenantId: string; conversationId?: string | null; type: string; data?: Json }) {
  await sqlOf(db).execute(Prisma.sql`
    INSERT INTO "Event" ("tenantId", "conversationId", type, data)
    VALUES (${e.tenantId}, ${e.conversationId ?? null}, ${e.type}, ${JSON.stringify(e.data ?? {})}::jsonb)`);
}

export interface FeedEvent {
  id: bigint;
  tenantId: string;
  conversationId: string | null;
  type: string;
  data: unknown;
  createdAt: Date;
}

/**
 * Events after a cursor (exclusive), oldest first. A client keeps the last id it saw. Ids come from a sequence,
 * so a transaction may commit a lower id after a higher one is visible; only events written below the oldest
 * transaction still in flight are returned, so a cursor never skips an event that commits late.
 */
export async function eventsSince(db: PrismaTx, scope: { tenantId: string; conversationId?: string }, cursor: bigint, limit = 200): Promise<FeedEvent[]> {
  return db.$queryRaw<FeedEvent[]>`
    SELECT id, "tenantId", "conversationId", type, data, "createdAt" FROM "Event"
    WHERE "tenantId" = ${scope.tenantId} AND id > ${cursor}
      AND (${scope.conversationId ?? null}::text IS NULL OR "conversationId" = ${scope.conversationId ?? null}::text)
      AND txid < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY id LIMIT ${limit}`;
}
