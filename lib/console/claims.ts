import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { addEvent } from "@/lib/store/events";
import { Statement } from "@/lib/store/statement";
import { env } from "@/lib/env";

/**
 * Claims a pending handoff for one reviewer (or renews their claim). A claim expires unless renewed, so a reviewer
 * who walks away does not block the item. Another reviewer's live claim → CLAIMED_BY_OTHER. One statement: the
 * claim is taken only if the item is pending and free (or already the caller's); otherwise it says why.
 */
export async function claimHandoff(client: object, actor: { tenantId: string; staffId: string }, handoffId: string) {
  const db = storeOf(client);
  const until = new Date(Date.now() + env().SUPPORT_CLAIM_MS);
  const s = Statement.plain();
  s.select(
    "h",
    sql`SELECT h.id, h.status::text AS status, h."conversationId", h."claimedById", h."claimExpiresAt",
               (SELECT name FROM "StaffUser" WHERE id = h."claimedById") AS "holderName"
        FROM "Handoff" h WHERE h.id = ${handoffId} AND h."tenantId" = ${actor.tenantId}`,
  );
  s.update(
    "claimed",
    "Handoff",
    { claimedById: actor.staffId, claimExpiresAt: until },
    sql<boolean>`"Handoff".id = ${handoffId} AND "Handoff"."tenantId" = ${actor.tenantId} AND "Handoff".status = 'PENDING'
      AND ("Handoff"."claimedById" IS NULL OR "Handoff"."claimedById" = ${actor.staffId} OR "Handoff"."claimExpiresAt" IS NULL OR "Handoff"."claimExpiresAt" <= now())`,
    { returning: sql`"Handoff".id, "Handoff"."conversationId"` },
  );
  addEvent(
    s,
    "ev",
    {
      tenantId: actor.tenantId,
      conversationId: sql`claimed."conversationId"`,
      type: "handoff.claimed",
      data: { handoffId, staffId: actor.staffId },
    },
    { from: ["claimed"] },
  );
  const row = await s.run<{ claimed: boolean; status: string | null; holderName: string | null }>(
    db,
    sql`EXISTS (SELECT 1 FROM claimed) AS claimed, (SELECT status FROM h) AS status, (SELECT "holderName" FROM h) AS "holderName"`,
  );
  if (!row?.status) throw new AppError("NOT_FOUND", "This handoff was not found.");
  if (row.claimed) return { handoffId, claimedById: actor.staffId, claimExpiresAt: until };
  // Refused. "h" is the item as the statement began; when a competing claim or decision was still being written then,
  // the UPDATE waited for it and checked the row again (READ COMMITTED does that for the updated row only), so "h" can
  // still show the item free and pending. Read it again now that the competitor has committed: the reviewer who lost
  // is told who has the item, or that it was decided, never "another reviewer" for a name the database knows.
  const now = await sql<{ status: string; holderName: string | null }>`
    SELECT h.status::text AS status, (SELECT name FROM "StaffUser" WHERE id = h."claimedById") AS "holderName"
    FROM "Handoff" h WHERE h.id = ${handoffId} AND h."tenantId" = ${actor.tenantId}`.execute(db);
  const { status, holderName } = now.rows[0] ?? row;
  if (status !== "PENDING") throw new AppError("ALREADY_DECIDED", `This item is already ${status.toLowerCase()}.`);
  throw new AppError("CLAIMED_BY_OTHER", `${holderName ?? "Another reviewer"} is working on this item.`, { claimedBy: holderName });
}

/** Lets go of one's own claim. */
export async function releaseHandoffClaim(client: object, actor: { tenantId: string; staffId: string }, handoffId: string) {
  const db = storeOf(client);
  const s = Statement.plain();
  s.select("h", sql`SELECT id FROM "Handoff" WHERE id = ${handoffId} AND "tenantId" = ${actor.tenantId}`);
  s.update(
    "released",
    "Handoff",
    { claimedById: null, claimExpiresAt: null },
    sql<boolean>`"Handoff".id = ${handoffId} AND "Handoff"."tenantId" = ${actor.tenantId} AND "Handoff"."claimedById" = ${actor.staffId}`,
    { returning: sql`"Handoff"."conversationId"` },
  );
  addEvent(
    s,
    "ev",
    {
      tenantId: actor.tenantId,
      conversationId: sql`released."conversationId"`,
      type: "handoff.claimed",
      data: { handoffId, staffId: null },
    },
    { from: ["released"] },
  );
  const row = await s.run<{ found: boolean; released: boolean }>(
    db,
    sql`EXISTS (SELECT 1 FROM h) AS found, EXISTS (SELECT 1 FROM released) AS released`,
  );
  if (!row?.found) throw new AppError("NOT_FOUND", "This handoff was not found.");
  return { handoffId, released: row.released };
}
