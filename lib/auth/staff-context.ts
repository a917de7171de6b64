import type { PrismaTx } from "@/lib/db/prisma-types";
import type { SessionClaims, StaffRole } from "./claims";

/** Who is calling, as the database says right now (not as the session token remembers it). */
export interface StaffContext {
  staffId: string;
  tenantId: string;
  tenantSlug: string;
  tenantName: string;
  role: StaffRole;
  name: string;
  email: string;
  /** null = may approve any amount */
  authorityLimitCents: number | null;
}

/**
 * Re-reads the staff row behind a session on every call, scoped to the session's tenant, so a deleted, moved or
 * deactivated user is refused at once and a changed role or authority applies at once. Null when gone.
 */
export async function loadStaffContext(db: PrismaTx, claims: Pick<SessionClaims, "staffId" | "tenantId">): Promise<StaffContext | null> {
  const staff = await db.staffUser.findFirst({
    where: { id: claims.staffId, tenantId: claims.tenantId, deactivatedAt: null },
    include: { tenant: true },
  });
  if (!staff) return null;
  return { ...claimsOfStaff(staff), authorityLimitCents: staff.authorityLimitCents };
}

/** The session claims of a staff row (with its tenant): what sign-in stores and every call re-derives. */
export function claimsOfStaff(staff: {
  id: string;
  tenantId: string;
  role: StaffRole;
  name: string;
  email: string;
  tenant: { slug: string; name: string };
}): SessionClaims {
  return {
    staffId: staff.id,
    tenantId: staff.tenantId,
    tenantSlug: staff.tenant.slug,
    tenantName: staff.tenant.name,
    role: staff.role,
    name: staff.name,
    email: staff.email,
  };
}
