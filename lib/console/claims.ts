import type { PrismaClient } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";
import { publishEvent } from "@/lib/events";

export const CLAIM_MS = Number(process.env.SUPPORT_CLAIM_MS ?? 5 * 60_000);

/**
 * Claims a pending handoff for one reviewer (or renews their claim). A claim expires unless renewed, so a
 * reviewer who walks away does not block the item. Another reviewer's live claim → CLAIMED_BY_OTHER.
 */
export async function claimHandoff(db: PrismaClient, actor: { tenantId: string; staffId: string }, handoffId: string) {
  return db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<Array<{ id: string }>>`SELECT id FROM "Handoff" WHERE id = ${handoffId} AND "tenantId" = ${actor.tenantId} FOR UPDATE`;
    if (!rows.length) throw new AppError("NOT_FOUND", "This handoff was not found.");
    const h = await tx.handoff.findUniqueOrThrow({ where: { id: handoffId } });
    if (h.status !== "PENDING") throw new AppError("ALREADY_DECIDED", `This item is already ${h.status.toLowerCase()}.`);
    const now = new Date();
    if (h.claimedById && h.claimedById !== actor.staffId && h.claimExpiresAt && h.claimExpiresAt > now) {
      const holder = await tx.staffUser.findUnique({ where: { id: h.claimedById } });
      throw new AppError("CLAIMED_BY_OTHER", `${holder?.name ?? "Another reviewer"} is working on this item.`, { claimedBy: holder?.name ?? null });
    }
    const until = new Date(now.getTime() + CLAIM_MS);
    await tx.handoff.update({ where: { id: handoffId }, data: { claimedById: actor.staffId, claimExpiresAt: until } });
    await publishEvent(tx, { tenantId: actor.tenantId, conversationId: h.conversationId, type: "handoff.claimed", data: { handoffId, staffId: actor.staffId } });
    return { handoffId, claimedById: actor.staffId, claimExpiresAt: until };
  });
}

/** Lets go of one's own claim. */
export async function releaseHandoffClaim(db: PrismaClient, actor: { tenantId: string; staffId: string }, handoffId: string) {
  const h = await db.handoff.findFirst({ where: { id: handoffId, tenantId: actor.tenantId } });
  if (!h) throw new AppError("NOT_FOUND", "This handoff was not found.");
  const released = await db.$transaction(async (tx) => {
    const { count } = await tx.handoff.updateMany({ where: { id: handoffId, claimedById: actor.staffId }, data: { claimedById: null, claimExpiresAt: null } });
    if (count) await publishEvent(tx, { tenantId: actor.tenantId, conversationId: h.conversationId, type: "handoff.claimed", data: { handoffId, staffId: null } });
    return count > 0;
  });
  return { handoffId, released };
}
