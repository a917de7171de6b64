import type { Transaction } from "kysely";
import type { DB, Store } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";

/** Who is changing settings: the caller's tenant and staff id (from the operation chain). */
export interface SettingsActor {
  tenantId: string;
  staffId: string;
}

export interface AdminRow {
  id: string;
  email: string;
  name: string;
}

/**
 * The data layer's own check that the caller is an active admin of the tenant, read from the database (in the
 * caller's transaction when there is one) — not trusted from the session or the operation chain alone.
 */
export async function requireAdmin(db: Store | Transaction<DB>, actor: SettingsActor): Promise<AdminRow> {
  const row = await db
    .selectFrom("StaffUser")
    .select(["id", "email", "name", "role"])
    .where("id", "=", actor.staffId)
    .where("tenantId", "=", actor.tenantId)
    .where("deactivatedAt", "is", null)
    .executeTakeFirst();
  if (!row) throw new AppError("UNAUTHENTICATED", "Your session is no longer valid. Sign in again.");
  if (row.role !== "admin") throw new AppError("FORBIDDEN", "Only admins can change the shop's settings.");
  return { id: row.id, email: row.email, name: row.name };
}
