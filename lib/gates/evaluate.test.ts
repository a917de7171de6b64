import { describe, expect, it } from "vitest";
import { evaluateGates } from "./evaluate";
import type { GateInput } from "./types";
import type { Gate } from "./types";
import { DEMO_POLICY_RULES } from "@/lib/db/seed";
import { policyRulesSchema } from "@/lib/policy/policy";

const rules = policyRulesSchema.parse(DEMO_POLICY_RULES);
const DANA = "cust_dana";
const now = new Date("2026-11-30T12:00:00Z");

function call(over: Partial<GateInput> & { toolName: string }): GateInput {
  return {
    input: {},
    canonicalInput: "{}",
    facts: { summary: "test", orderNumber: "A-1002", customerId: DANA, orderStatus: "delivered", orderTotalCents: 25000, refundableCents: 25000 },
    isKnownTool: true,
    accountAction: true,
    sideEffect: true,
    state: { verifiedCustomerId: DANA, verificationExpiresAt: new Date(now.getTime() + 60_000), now, previousCall: null },
    policy: { version: 1, rules },
    ...over,
  };
}
const refund = (amountCents: number, over: Partial<GateInput> = {}) =>
  call({ toolName: "refund_order", facts: { summary: "refund", orderNumber: "A-1004", customerId: DANA, orderStatus: "delivered", orderTotalCents: 90000, refundableCents: 90000, amountCents }, ...over });

describe("refund bands (policy v1)", () => {
  it.each([
    [4250, "allow", undefined],
    [10000, "allow", undefined],
    [10001, "ask", 1],
    [25000, "ask", 1],
    [39999, "ask", 1],
    [40000, "ask", 2],
    [50000, "ask", 2],
    [50001, "deny", undefined],
    [82000, "deny", undefined],
  ])("%i cents → %s (approvers %s)", (amount, decision, approvers) => {
    const { verdict } = evaluateGates(refund(amount));
    expect(verdict.decision).toBe(decision);
    if (approvers) expect(verdict.requiredApprovals).toBe(approvers);
    if (amount > 50000) expect(verdict.escalate).toBe(true);
  });

  it("refuses more than is still refundable", () => {
    const { verdict } = evaluateGates(call({ toolName: "refund_order", facts: { summary: "r", orderNumber: "A-1001", customerId: DANA, orderStatus: "delivered", orderTotalCents: 4250, refundableCents: 1000, amountCents: 4250 } }));
    expect(verdict.decision).toBe("deny");
    expect(verdict.reason).toMatch(/still refundable/);
  });

  it("bounds a reviewer's edit by their authority instead of the band", () => {
    const rita = { id: "s1", name: "Rita", authorityLimitCents: 30000 };
    expect(evaluateGates(refund(25000, { reviewer: rita })).verdict.decision).toBe("allow");
    const over = evaluateGates(refund(35000, { reviewer: rita })).verdict;
    expect(over.decision).toBe("deny");
    expect(over.reason).toMatch(/authority/);
    expect(evaluateGates(refund(60000, { reviewer: { ...rita, authorityLimitCents: null } })).verdict.decision).toBe("deny");
  });
});

describe("prerequisites and other gates", () => {
  it("denies account actions before verification, recoverably", () => {
    const { verdict } = evaluateGates(call({ toolName: "lookup_order", sideEffect: false, state: { verifiedCustomerId: null, verificationExpiresAt: null, now, previousCall: null } }));
    expect(verdict).toMatchObject({ decision: "deny", gate: "verified_customer", retryable: true });
    expect(verdict.reason).toMatch(/verify_customer first/);
  });

  it("denies after verification expired", () => {
    const { verdict } = evaluateGates(call({ toolName: "lookup_order", state: { verifiedCustomerId: DANA, verificationExpiresAt: new Date(now.getTime() - 1), now, previousCall: null } }));
    expect(verdict.reason).toMatch(/expired/);
  });

  it("denies an order of another customer", () => {
    const { verdict } = evaluateGates(call({ toolName: "lookup_order", facts: { summary: "x", orderNumber: "A-2001", customerId: "cust_sam" } }));
    expect(verdict.decision).toBe("deny");
  });

  it("denies tools outside the allowlist and unknown tools", () => {
    expect(evaluateGates(call({ toolName: "delete_database", isKnownTool: false })).verdict.gate).toBe("allowlist");
    const narrowed = { version: 2, rules: { ...rules, allowedTools: ["verify_customer"] } };
    expect(evaluateGates(call({ toolName: "lookup_order", policy: narrowed })).verdict.decision).toBe("deny");
  });

  it("detects the same call twice in a row", () => {
    const { verdict } = evaluateGates(call({ toolName: "lookup_order", canonicalInput: '{"order_number":"A-1002"}', state: { verifiedCustomerId: DANA, verificationExpiresAt: null, now, previousCall: { name: "lookup_order", canonicalInput: '{"order_number":"A-1002"}' } } }));
    expect(verdict.gate).toBe("identical_call");
  });

  it("asks for every cancellation of a processing order and denies a shipped one", () => {
    expect(evaluateGates(call({ toolName: "cancel_order", facts: { summary: "c", orderNumber: "A-2001", customerId: DANA, orderStatus: "processing", amountCents: 12900 } })).verdict.decision).toBe("ask");
    expect(evaluateGates(call({ toolName: "cancel_order", facts: { summary: "c", orderNumber: "A-1001", customerId: DANA, orderStatus: "delivered", amountCents: 4250 } })).verdict.decision).toBe("deny");
  });

  it("replacements: automatic up to $200, approval above", () => {
    const rep = (amountCents: number) => call({ toolName: "create_replacement", facts: { summary: "r", orderNumber: "A-1002", customerId: DANA, orderStatus: "delivered", amountCents } });
    expect(evaluateGates(rep(18000)).verdict.decision).toBe("allow");
    expect(evaluateGates(rep(25000)).verdict.decision).toBe("ask");
  });

  it("precedence is deny > defer > ask > allow, and a throwing gate denies", () => {
    const g = (name: string, decision: "allow" | "ask" | "defer" | "deny"): Gate => ({ name, check: () => ({ decision, reason: name }) });
    expect(evaluateGates(refund(1), [g("a", "allow"), g("b", "ask"), g("c", "defer")]).verdict.gate).toBe("c");
    expect(evaluateGates(refund(1), [g("a", "ask"), g("d", "deny"), g("c", "defer")]).verdict.gate).toBe("d");
    expect(evaluateGates(refund(1), [g("a", "allow"), g("b", "ask")]).verdict.gate).toBe("b");
    const boom: Gate = { name: "boom", check: () => { throw new Error("bug"); } };
    const { verdict } = evaluateGates(refund(1), [g("a", "allow"), boom]);
    expect(verdict.decision).toBe("deny");
  });
});
