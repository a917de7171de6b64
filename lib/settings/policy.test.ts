import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEMO_POLICY_RULES } from "@/lib/setup/seed";
import type { PrismaClient } from "@/lib/db/client";
import type { AppError } from "@/lib/errors";
import { type PolicyRules, policyRulesSchema } from "@/lib/policy/policy";
import { createHarness, type Harness } from "@/test/runtime-harness";
import { formValuesOf, policyChanges, rulesFromForm } from "./policy-fields";
import { KNOWN_TOOLS, policySettings, publishPolicy } from "./policy";

// The real server actions, called as whoever `session.claims` says (the session cookie is the only thing stubbed).
const session = vi.hoisted(() => ({ claims: null as { staffId: string; tenantId: string } | null, db: null as unknown }));
vi.mock("@/lib/auth/session", () => ({ getSessionClaims: async () => session.claims }));
vi.mock("@/lib/db/client", async (importOriginal) => ({
  ...(await importOriginal<object>()),
  getPrisma: async () => session.db as PrismaClient,
}));

const V1 = policyRulesSchema.parse(DEMO_POLICY_RULES);
const lowered = (autoMaxCents: number): PolicyRules => ({ ...V1, refund: { ...V1.refund, autoMaxCents } });

describe("the policy form", () => {
  it("round-trips every rule through the form's values", () => {
    const values = formValuesOf(V1);
    expect(values["refund.autoMaxCents"]).toBe("100.00");
    expect(values["budgets.maxRunCostMicros"]).toBe("0.50");
    expect(values["cancellation.requiresApproval"]).toBe(true);
    expect(rulesFromForm(values, KNOWN_TOOLS)).toEqual({ rules: V1, errors: null });
  });

  it("covers every field of the rules", () => {
    const leaves = (o: unknown, prefix = ""): string[] =>
      o && typeof o === "object" && !Array.isArray(o)
        ? Object.entries(o).flatMap(([k, v]) => leaves(v, prefix ? `${prefix}.${k}` : k))
        : [prefix];
    expect(Object.keys(formValuesOf(V1)).sort()).toEqual(leaves(V1).sort());
  });

  it("reads dollars as people write them, and says what is wrong field by field", () => {
    const values = formValuesOf(V1);
    expect(rulesFromForm({ ...values, "refund.autoMaxCents": "$1,250.5" }, KNOWN_TOOLS).errors).toMatchObject({
      "refund.twoApproversFromCents": "Must be at least the automatic limit ($1,250.50).",
    });
    const bad = rulesFromForm(
      {
        ...values,
        "refund.autoMaxCents": "12.345",
        "refund.approvalMaxCents": "300",
        "budgets.maxTurns": "0",
        approvalTtlHours: "",
        allowedTools: ["lookup_order", "refund_order"],
      },
      KNOWN_TOOLS,
    );
    expect(bad.errors).toEqual({
      "refund.autoMaxCents": "Write an amount in dollars, e.g. 100.00.",
      approvalTtlHours: "Required.",
      "refund.approvalMaxCents": "Must be at least the two-approver threshold ($400.00).",
      "budgets.maxTurns": "Must be more than 0.",
      allowedTools: "The agent must always be able to hand the conversation to a person.",
    });
    expect(rulesFromForm({ ...values, allowedTools: [...KNOWN_TOOLS, "drop_database"] }, KNOWN_TOOLS).errors).toEqual({
      allowedTools: "Unknown tools: drop_database.",
    });
  });

  it("says the difference between two versions in words", () => {
    const after: PolicyRules = {
      ...lowered(8000),
      cancellation: { requiresApproval: false },
      allowedTools: V1.allowedTools.filter((t) => t !== "cancel_order"),
      budgets: { ...V1.budgets, maxRunCostMicros: 250_000 },
    };
    expect(policyChanges(V1, after).map((c) => c.text)).toEqual([
      "Refunds run automatically up to: $100.00 → $80.00",
      "Every cancellation needs a person's confirmation: yes → no",
      "Allowed tools: removed Cancel an order",
      "Model spend per run: $0.50 → $0.25",
    ]);
    expect(policyChanges(V1, { ...V1, allowedTools: [...V1.allowedTools].reverse() })).toEqual([]);
  });
});

describe("publishing a policy version", () => {
  let h: Harness;
  beforeAll(async () => {
    // The shop's rules as seeded (specialists offered), so a draft of the demo rules differs only where it says.
    h = await createHarness({ specialists: true });
    session.db = h.db;
  });
  afterAll(async () => {
    await h?.close();
  });
  const as = (who: { id: string; tenantId: string }) => ({ staffId: who.id, tenantId: who.tenantId });

  it("writes version + 1, moves the shop to it and records who changed what", async () => {
    const published = await publishPolicy(h.db, as(h.staff.ada), { baseVersion: 1, rules: lowered(4000) });
    expect(published.version).toBe(2);
    expect((await h.db.tenant.findUniqueOrThrow({ where: { id: h.acme.id } })).policyVersion).toBe(2);
    const row = await h.db.policyVersion.findUniqueOrThrow({ where: { tenantId_version: { tenantId: h.acme.id, version: 2 } } });
    expect(row.publishedById).toBe(h.staff.ada.id);
    expect(policyRulesSchema.parse(row.rules).refund.autoMaxCents).toBe(4000);
    const audit = await h.db.auditEvent.findFirstOrThrow({ where: { tenantId: h.acme.id, action: "policy.published" } });
    expect(audit).toMatchObject({ actor: "ada@acme.test", subject: "policy:v2" });
    expect(audit.data).toEqual({
      version: 2,
      baseVersion: 1,
      changes: [{ path: "refund.autoMaxCents", before: 10000, after: 4000, text: "Refunds run automatically up to: $100.00 → $40.00" }],
    });
    const settings = await policySettings(h.db, as(h.staff.ada));
    expect(settings.current).toMatchObject({ version: 2, publishedBy: { name: "Ada", email: "ada@acme.test" } });
    expect(settings.history.map((v) => [v.version, v.changes])).toEqual([
      [2, ["Refunds run automatically up to: $100.00 → $40.00"]],
      [1, []],
    ]);
  });

  it("refuses a draft made on a stale version, and writes nothing", async () => {
    const before = await h.db.auditEvent.count();
    const err = await publishPolicy(h.db, as(h.staff.ada), { baseVersion: 1, rules: lowered(5000) }).catch((e: AppError) => e);
    expect(err).toMatchObject({ code: "STALE_VERSION", details: { currentVersion: 2 } });
    expect(await h.db.policyVersion.count({ where: { tenantId: h.acme.id } })).toBe(2);
    expect(await h.db.auditEvent.count()).toBe(before);
  });

  it("lets only one of two admins publishing from the same version win", async () => {
    const results = await Promise.allSettled([
      publishPolicy(h.db, as(h.staff.ada), { baseVersion: 2, rules: lowered(3000) }),
      publishPolicy(h.db, as(h.staff.ada), { baseVersion: 2, rules: lowered(2000) }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(lost.reason).toMatchObject({ code: "STALE_VERSION" });
    expect(await h.db.policyVersion.count({ where: { tenantId: h.acme.id } })).toBe(3);
  });

  it("refuses a draft that changes nothing or breaks a rule", async () => {
    const current = (await policySettings(h.db, as(h.staff.ada))).current;
    await expect(publishPolicy(h.db, as(h.staff.ada), { baseVersion: current.version, rules: current.rules })).rejects.toMatchObject({
      code: "INVALID_INPUT",
      userMessage: expect.stringMatching(/Nothing changed/),
    });
    await expect(
      publishPolicy(h.db, as(h.staff.ada), { baseVersion: current.version, rules: { ...current.rules, approvalTtlHours: -1 } }),
    ).rejects.toMatchObject({ code: "INVALID_INPUT", details: { fields: { approvalTtlHours: "Must be more than 0." } } });
  });

  it("refuses reviewers and supervisors in the data layer", async () => {
    for (const who of [h.staff.rita, h.staff.sol]) {
      await expect(publishPolicy(h.db, as(who), { baseVersion: 3, rules: lowered(1000) })).rejects.toMatchObject({ code: "FORBIDDEN" });
      await expect(policySettings(h.db, as(who))).rejects.toMatchObject({ code: "FORBIDDEN" });
    }
    // Another shop's admin-looking call is scoped to their own shop: globex has no version 3.
    await expect(publishPolicy(h.db, as(h.staff.gus), { baseVersion: 3, rules: lowered(1000) })).rejects.toMatchObject({
      code: "FORBIDDEN",
    });
  });

  it("refuses reviewers and supervisors in the operation chain, before the domain runs", async () => {
    const actions = await import("@/lib/actions/settings");
    for (const who of [h.staff.rita, h.staff.sol]) {
      session.claims = as(who);
      expect(await actions.publishPolicyAction({ baseVersion: 3, rules: lowered(1000) })).toEqual({
        ok: false,
        error: { code: "FORBIDDEN", message: "Your role cannot do this." },
      });
      expect(await actions.previewPolicyAction({ rules: V1 })).toMatchObject({ ok: false, error: { code: "FORBIDDEN" } });
    }
    session.claims = as(h.staff.ada);
    const preview = await actions.previewPolicyAction({ rules: lowered(1000), days: 7 });
    expect(preview).toMatchObject({ ok: true, data: { days: 7 } });
    session.claims = null;
    expect(await actions.publishPolicyAction({ baseVersion: 3, rules: V1 })).toMatchObject({
      ok: false,
      error: { code: "UNAUTHENTICATED" },
    });
  });

  it("runs in flight keep their version; new conversations take the new one", async () => {
    const version = (await policySettings(h.db, as(h.staff.ada))).current.version;
    // Back to v1's bands: $250 parks under this version.
    await publishPolicy(h.db, as(h.staff.ada), { baseVersion: version, rules: V1 });
    const old = await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
    expect(old.handoffs[0]).toMatchObject({ rule: { gate: "refund_policy", policyVersion: version + 1 } });
    // The admin makes every refund over $20 need an approval.
    await publishPolicy(h.db, as(h.staff.ada), { baseVersion: version + 1, rules: lowered(2000) });
    const fresh = await h.say("Hi, I'm dana@example.com. My order A-1001 arrived damaged, please refund it.");
    expect(fresh.phase).toBe("WAITING_FOR_APPROVAL");
    expect(fresh.handoffs[0]).toMatchObject({ amountCents: 4250, rule: { gate: "refund_policy", policyVersion: version + 2 } });
    // The older run still holds its version, and its approval still runs under it.
    expect((await h.db.run.findUniqueOrThrow({ where: { id: old.runId! } })).policyVersion).toBe(version + 1);
    const decided = await h.decide(old.handoffs[0]!.id, "raj@acme.test", "approve");
    expect(decided.outcome).toBe("approved");
    expect((await h.effects()).map((e) => e.toolName)).toEqual(["refund_order"]);
  });
});
