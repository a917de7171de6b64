import type { PrismaTx } from "@/lib/db/prisma-types";
import { AppError } from "@/lib/errors";

/** Years PostgreSQL's timestamps and ISO 8601's four digits both hold: year 0 is valid ISO but no PostgreSQL date. */
export const inDateRange = (d: Date) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999;

/**
 * Keyset cursors of the API's lists: the (createdAt, id) of the last row of a page, opaque to callers. Lists are
 * ordered by (createdAt, id) ascending and show only rows no open transaction can still date before them
 * (`committedRows`), so a page never repeats or skips a row when new ones arrive meanwhile.
 */
export interface Keyset {
  createdAt: Date;
  id: string;
}

export function encodeCursor(k: Keyset): string {
  return Buffer.from(`${k.createdAt.toISOString()}|${k.id}`, "utf8").toString("base64url");
}

/** `refusal`: what a caller is told of a cursor no list gave out (the API names its query parameter, the CLI its option). */
export function decodeCursor(raw: string | undefined, refusal = "query.cursor: not a cursor this API gave out."): Keyset | null {
  if (!raw) return null;
  const [at, id, ...rest] = Buffer.from(raw, "base64url").toString("utf8").split("|");
  const createdAt = new Date(at ?? "");
  if (rest.length || !id || !/^[A-Za-z0-9_-]{1,64}$/.test(id) || Number.isNaN(createdAt.getTime()) || !inDateRange(createdAt))
    throw new AppError("INVALID_INPUT", refusal);
  return { createdAt, id };
}

/**
 * The Prisma `where` of the rows a list may show now: those dated before every transaction of this database still
 * open. A row's createdAt is its transaction's start (now()), so a transaction still open — waiting on a lock, say —
 * may yet commit a row dated before rows already committed; a page that showed those, and a cursor past them, would
 * skip it for good. Held back here, such rows show a moment later (the product holds no transaction anywhere near the
 * 60 s past which one no longer holds the lists back). Another database's transactions, and this one's, never do.
 * One millisecond earlier still: createdAt is rounded to the millisecond, the start is not.
 */
export async function committedRows(db: PrismaTx): Promise<{ createdAt: { lt: Date } }> {
  const [row] = await db.$queryRaw<Array<{ at: Date }>>`
    SELECT greatest(coalesce(min(xact_start), now()), now() - interval '60 seconds') - interval '1 millisecond' AS at
    FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL`;
  return { createdAt: { lt: row!.at } };
}

/** The Prisma `where` of the rows after a cursor, in (createdAt, id) order. */
export function afterCursor(k: Keyset | null) {
  return k ? { OR: [{ createdAt: { gt: k.createdAt } }, { createdAt: k.createdAt, id: { gt: k.id } }] } : {};
}

/** Splits `limit + 1` rows into a page and the cursor of the next one (null on the last page). */
export function pageOf<T extends Keyset>(rows: T[], limit: number): { rows: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!) : null };
}
