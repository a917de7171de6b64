import type { PrismaTx } from "@/lib/db/prisma-types";

/** The shop's staff by id, for the names a presented record shows (approvers, a claim, a decider, a token's creator). */
export async function staffNames(db: PrismaTx, tenantId: string): Promise<Map<string, string>> {
  const staff = await db.staffUser.findMany({ where: { tenantId }, select: { id: true, name: true } });
  return new Map(staff.map((s) => [s.id, s.name]));
}
