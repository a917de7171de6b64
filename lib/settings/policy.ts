// The shop's policy in settings: what is in force, the history of versions (each change in words), and publishing
// a new version. Versions are immutable; publishing writes version + 1 and moves the tenant's pointer in ONE
// statement that also writes the audit record — and only if the pointer is still at the version the admin edited.
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { AppError } from "@/lib/errors";
import { type PolicyRules, policyRulesSchema } from "@/lib/policy/policy";
import { addAudit } from "@/lib/store/audit";
import { json, Statement } from "@/lib/store/statement";
import { tools } from "@/lib/tools/registry";
import { requireAdmin, type SettingsActor } from "./admin";
import { type PolicyChange, policyChanges, policyProblems } from "./policy-fields";

/** The tools the product has, in the registry's order (the form offers these). */
export const KNOWN_TOOLS: readonly string[] = tools.map((t) => t.name);

export interface PolicyVersionSummary {
  version: number;
  publishedAt: Date;
  /** null: the shop's first version (from setup) */
  publishedBy: { name: string; email: string } | null;
  /** what changed from the version before, in words (empty for the first) */
  changes: string[];
}

export interface PolicySettings {
  current: PolicyVersionSummary & { rules: PolicyRules };
  /** newest first */
  history: PolicyVersionSummary[];
  knownTools: readonly string[];
  /** each person's approval authority (the policy's "reviewer authorities"; changed on the staff page) */
  authorities: Array<{ name: string; role: string; authorityLimitCents: number | null }>;
}

/** The policy in force, its history (newest first, at most `historyLimit`) and the reviewers' authorities. */
export async function policySettings(client: object, actor: SettingsActor, historyLimit = 50): Promise<PolicySettings> {
  const db = storeOf(client);
  await requireAdmin(db, actor);
  const tenant = await db.selectFrom("Tenant").select("policyVersion").where("id", "=", actor.tenantId).executeTakeFirstOrThrow();
  const [versions, staff] = await Promise.all([
    db
      .selectFrom("PolicyVersion as p")
      .leftJoin("StaffUser as s", (j) => j.onRef("s.id", "=", "p.publishedById").onRef("s.tenantId", "=", "p.tenantId"))
      .select(["p.version", "p.rules", "p.createdAt", "s.name", "s.email"])
      .where("p.tenantId", "=", actor.tenantId)
      .orderBy("p.version", "desc")
      .limit(historyLimit + 1)
      .execute(),
    db
      .selectFrom("StaffUser")
      .select(["name", "role", "authorityLimitCents"])
      .where("tenantId", "=", actor.tenantId)
      .where("deactivatedAt", "is", null)
      .orderBy("name")
      .execute(),
  ]);
  const parsed = versions.map((v) => ({ ...v, rules: policyRulesSchema.parse(v.rules) }));
  const history: Array<PolicyVersionSummary & { rules: PolicyRules }> = parsed.slice(0, historyLimit).map((v, i) => {
    const before = parsed[i + 1];
    return {
      version: v.version,
      publishedAt: v.createdAt,
      publishedBy: v.name && v.email ? { name: v.name, email: v.email } : null,
      changes: before && before.version === v.version - 1 ? policyChanges(before.rules, v.rules).map((c) => c.text) : [],
      rules: v.rules,
    };
  });
  const current = history.find((v) => v.version === tenant.policyVersion);
  if (!current) throw new Error(`policy version ${tenant.policyVersion} of tenant ${actor.tenantId} not found`);
  return {
    current,
    history: history.map(({ rules: _rules, ...summary }) => summary),
    knownTools: KNOWN_TOOLS,
    authorities: staff,
  };
}

/**
 * Checks a draft as the form would, and returns it with defaults applied. Bad input → INVALID_INPUT with each
 * field's problem in `details.fields` (the form shows them inline).
 */
export function validateDraft(raw: unknown): PolicyRules {
  const problems = policyProblems(raw, KNOWN_TOOLS);
  if (Object.keys(problems).length) {
    throw new AppError("INVALID_INPUT", `The policy has ${Object.keys(problems).length} problem(s): ${Object.values(problems).join(" ")}`, {
      fields: problems,
    });
  }
  return policyRulesSchema.parse(raw);
}

export interface PublishedPolicy {
  version: number;
  changes: PolicyChange[];
}

/**
 * Publishes a new policy version: version + 1 written, the tenant's pointer moved to it and a `policy.published`
 * audit record (the admin, the changes) — one statement, so all or nothing. Runs in flight keep the version they
 * started with; new runs take this one. Refused with STALE_VERSION when the policy moved since `baseVersion` (the
 * version the admin edited), with INVALID_INPUT when the draft is invalid or changes nothing; admins only.
 */
export async function publishPolicy(
  client: object,
  actor: SettingsActor,
  input: { baseVersion: number; rules: unknown },
): Promise<PublishedPolicy> {
  const db = storeOf(client);
  const admin = await requireAdmin(db, actor);
  const draft = validateDraft(input.rules);
  // The base version is immutable: the changes computed from it stay true whatever happens meanwhile.
  const base = await db
    .selectFrom("PolicyVersion")
    .select("rules")
    .where("tenantId", "=", actor.tenantId)
    .where("version", "=", input.baseVersion)
    .executeTakeFirst();
  if (!base) throw new AppError("NOT_FOUND", `Policy version ${input.baseVersion} was not found.`);
  const changes = policyChanges(policyRulesSchema.parse(base.rules), draft);
  if (!changes.length) throw new AppError("INVALID_INPUT", "Nothing changed: this draft is the same as the version it started from.");

  const version = input.baseVersion + 1;
  const s = Statement.plain();
  // Moves only from the base version: a concurrent publish (or a stale form) matches no row, so nothing is written.
  s.update(
    "moved",
    "Tenant",
    { policyVersion: version },
    sql<boolean>`"Tenant".id = ${actor.tenantId} AND "Tenant"."policyVersion" = ${input.baseVersion}`,
  );
  s.insert(
    "published",
    "PolicyVersion",
    { id: randomUUID(), tenantId: actor.tenantId, version, rules: json(draft), publishedById: admin.id },
    { from: ["moved"] },
  );
  addAudit(
    s,
    "audit",
    {
      tenantId: actor.tenantId,
      actor: admin.email,
      action: "policy.published",
      subject: `policy:v${version}`,
      data: {
        version,
        baseVersion: input.baseVersion,
        changes: changes.map(({ path, before, after, text }) => ({ path, before, after, text })),
      },
    },
    { from: ["moved"] },
  );
  const row = await s.run<{ moved: number }>(db, sql`(SELECT count(*) FROM moved)::int AS moved`);
  if (!row?.moved) {
    const now = await db.selectFrom("Tenant").select("policyVersion").where("id", "=", actor.tenantId).executeTakeFirst();
    throw new AppError(
      "STALE_VERSION",
      `The policy changed since you opened it (now version ${now?.policyVersion ?? "?"}). Reload, check the changes and publish again.`,
      { currentVersion: now?.policyVersion ?? null },
    );
  }
  return { version, changes };
}
