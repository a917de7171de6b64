import type { PrismaTx } from "@/lib/db/prisma-types";
import { policyRulesSchema, type Policy } from "@/lib/policy/policy";

/** Loads a tenant's policy at a version (a run keeps the version it started with), validated on read. */
export async function loadPolicy(db: PrismaTx, tenantId: string, version?: number): Promise<Policy> {
  const v = version ?? (await db.tenant.findUniqueOrThrow({ where: { id: tenantId }, select: { policyVersion: true } })).policyVersion;
  const row = await db.policyVersion.findUniqueOrThrow({ where: { tenantId_version: { tenantId, version: v } } });
  return { version: row.version, rules: policyRulesSchema.parse(row.rules) };
}
