import type { Store } from "@/lib/db/kysely";
import { type Policy, policyRulesSchema } from "@/lib/policy/policy";

// Policy versions are immutable once written, so a process keeps the ones it has read.
const versions = new Map<string, Policy>();

/**
 * Loads a tenant's policy at a version (a run keeps the version it started with; default: the current one),
 * validated on read.
 */
export async function loadPolicy(db: Store, tenantId: string, version?: number): Promise<Policy> {
  let v = version;
  if (v === undefined) {
    const tenant = await db.selectFrom("Tenant").select("policyVersion").where("id", "=", tenantId).executeTakeFirst();
    if (!tenant) throw new Error(`tenant ${tenantId} not found`);
    v = tenant.policyVersion;
  }
  const key = `${tenantId}:${v}`;
  const cached = versions.get(key);
  if (cached) return cached;
  const row = await db
    .selectFrom("PolicyVersion")
    .select(["version", "rules"])
    .where("tenantId", "=", tenantId)
    .where("version", "=", v)
    .executeTakeFirst();
  if (!row) throw new Error(`policy version ${v} of tenant ${tenantId} not found`);
  const policy = { version: row.version, rules: policyRulesSchema.parse(row.rules) };
  versions.set(key, policy);
  return policy;
}

/** The policy version cached for a tenant's current version, if this process has read it (a hint, never trusted alone). */
export function cachedPolicy(tenantId: string, version: number): Policy | undefined {
  return versions.get(`${tenantId}:${version}`);
}
