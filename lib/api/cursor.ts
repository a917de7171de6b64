import { AppError } from "@/lib/errors";

/** Years PostgreSQL's timestamps and ISO 8601's four digits both hold: year 0 is valid ISO but no PostgreSQL date. */
export const inDateRange = (d: Date) => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999;

/**
 * Keyset cursors of the API's lists: the (createdAt, id) of the last row of a page, opaque to callers. Lists are
 * ordered by (createdAt, id) ascending, so a page never repeats or skips a row when new ones arrive meanwhile.
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

/** The Prisma `where` of the rows after a cursor, in (createdAt, id) order. */
export function afterCursor(k: Keyset | null) {
  return k ? { OR: [{ createdAt: { gt: k.createdAt } }, { createdAt: k.createdAt, id: { gt: k.id } }] } : {};
}

/** Splits `limit + 1` rows into a page and the cursor of the next one (null on the last page). */
export function pageOf<T extends Keyset>(rows: T[], limit: number): { rows: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!) : null };
}
