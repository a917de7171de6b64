import { createHmac, randomBytes, randomInt, randomUUID, timingSafeEqual } from "node:crypto";
import { sql, type Transaction } from "kysely";
import type { DB } from "@/lib/db/kysely";

type Tx = Transaction<DB>;

/** One-time codes: 6 digits, valid 10 minutes, 3 wrong tries (fewer than the conversation may fail), usable once, only in the conversation that asked. */
export const CODE_TTL_MINUTES = 10;
export const MAX_CODE_ATTEMPTS = 3;

export function newCode(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, "0");
}

function hashCode(code: string, salt: string): Buffer {
  return createHmac("sha256", salt).update(code).digest();
}

/** "123 456", "123-456" → "123456"; anything else is not a code (and is simply wrong). */
export function normaliseCode(raw: string): string {
  return raw.replace(/[\s-]/g, "");
}

/**
 * Stores a new code for (conversation, email), hashed with its own salt; the latest code is the only one that
 * counts. `customerId` is null when no account has that email: the row exists anyway (never sent), so checking
 * a code does the same work whoever asked.
 */
export async function storeCode(
  tx: Tx,
  a: { tenantId: string; conversationId: string; emailHash: string; customerId: string | null; code: string; now: Date },
): Promise<void> {
  const salt = randomBytes(16).toString("hex");
  await tx
    .insertInto("VerificationCode")
    .values({
      id: randomUUID(),
      tenantId: a.tenantId,
      conversationId: a.conversationId,
      emailHash: a.emailHash,
      customerId: a.customerId,
      salt,
      codeHash: hashCode(a.code, salt).toString("hex"),
      expiresAt: new Date(a.now.getTime() + CODE_TTL_MINUTES * 60_000),
    })
    .execute();
}

const NO_SALT = "0".repeat(32);
const NO_HASH = Buffer.alloc(32);

/**
 * Checks a code against the latest one of (conversation, email): the customer it proves, or null — for a wrong,
 * expired, used-up or never-issued code alike. A right code is consumed; a wrong one counts against its code.
 */
export async function redeemCode(
  tx: Tx,
  a: { tenantId: string; conversationId: string; emailHash: string; code: string; now: Date },
): Promise<string | null> {
  const {
    rows: [row],
  } = await sql<{
    id: string;
    customerId: string | null;
    codeHash: string;
    salt: string;
    attempts: number;
    expiresAt: Date;
    consumedAt: Date | null;
  }>`
    SELECT id, "customerId", "codeHash", salt, attempts, "expiresAt", "consumedAt" FROM "VerificationCode"
    WHERE "tenantId" = ${a.tenantId} AND "conversationId" = ${a.conversationId} AND "emailHash" = ${a.emailHash}
    ORDER BY "createdAt" DESC, id DESC LIMIT 1 FOR UPDATE`.execute(tx);
  // Compared in constant time, and compared even when there is nothing to compare with.
  const given = hashCode(normaliseCode(a.code), row?.salt ?? NO_SALT);
  const stored = row ? Buffer.from(row.codeHash, "hex") : NO_HASH;
  const equal = stored.length === given.length && timingSafeEqual(stored, given);
  if (!row || row.consumedAt) return null;
  const usable = row.expiresAt > a.now && row.attempts < MAX_CODE_ATTEMPTS;
  if (usable && equal && row.customerId) {
    await tx.updateTable("VerificationCode").set({ consumedAt: a.now }).where("id", "=", row.id).execute();
    return row.customerId;
  }
  await tx
    .updateTable("VerificationCode")
    .set((eb) => ({ attempts: eb("attempts", "+", 1) }))
    .where("id", "=", row.id)
    .execute();
  return null;
}
