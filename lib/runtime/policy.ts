import { Prisma } from "@/lib/db/prisma-types";
import { sqlOf, type Db } from "@/lib/db/sql";
import { policyRulesSchema, type Policy } from "@/lib/policy/policy";

// Policy versions are immutable once written, so a process keeps the ones it has read.
const versions = new Map<string, Policy>();

/** Loads a tenant's policy at a version (a run keeps the version it started with; default: the current one), validated on read. */
export async function loadPolicy(db: Db, tenantId: string, version?: number): Promise<Policy> {
  const sql = sqlOf(db);
  let v = version;
  if (v === undefined) {
    const [tenant] = await sql.query<{ policyVersion: number }>(Prisma.sql`SELECT "policyVersion" FROM "Tenant" WHERE id = ${tenantId}`);
    if (!tenant) throw new Error(`tenant ${tenantId} not found`);
    v = tenant.policyVersion;
  }
  const key = `${tenantId}:${v}`;
  const cached = versions.get(key);
  if (cached) return cached;
  const [row] = await sql.query<{ version: number; rules: unknown }>(Prisma.sql`
    SELECT version, rules FROM "PolicyVersion" WHERE "tenantId" = ${tenantId} AND version = ${v}`);
  if (!row) throw new Error(`policy version ${v} of tenant ${tenantId} not found`);
  const policy = { version: row.version, rules: policyRulesSchema.parse(row.rules) };
  versions.set(key, policy);
  return policy;
}
