import type { PrismaTx } from "@/lib/db/prisma-types";
import { policyRulesSchema, type Policy } from "@/lib/policy/policy";

// Policy versions are immutable once written, so a process keeps the ones it has read.
const versions = new Map<string, Policy>();

/** Loads a tenant's policy at a version (a run keeps the version it started with), validated on read. */
export async function loadPolicy(db: PrismaTx, tenantId: string, version?: number): Promise<Policy> {
  const v = version ?? (await db.tenant.findUniqueOrThrow({ where: { id: tenantId }, select: { policyVersion: true } })).policyVersion;
  const key = `${tenantId}:${v}`;
  const cached = versions.get(key);
  if (cached) return cached;
  const row = await db.policyVersion.findUniqueOrThrow({ where: { tenantId_version: { tenantId, version: v } } });
  const policy = { version: row.version, rules: policyRulesSchema.parse(row.rules) };
  versions.set(key, policy);
  return policy;
}
