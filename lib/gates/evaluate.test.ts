import { describe, expect, it } from "vitest";
import { evaluateGates } from "./evaluate";
import type { GateInput } from "./types";
import type { Gate } from "./types";
import { DEMO_POLICY_RULES } from "@/lib/setup/seed";
import { policyRulesSchema } from "@/lib/policy/policy";
import type { MoneyTotals } from "@/lib/tools/types";

const rules = policyRulesSchema.parse(DEMO_POLICY_RULES);
/** Nothing done, waiting or asked yet: the totals of a first request. */
const NONE: MoneyTotals = {
  orderDoneCents: 0,
  orderPendingCents: 0,
  sameTurnCents: 0,
  customerAutoCents: 0,
  customerPendingAutoCents: 0,
  windowDays: 30,
};
const DANA = "cust_dana";
const now = new Date("2026-11-30T12:00:00Z");

function call(over: Partial<GateInput> & { toolName: string }): GateInput {
  return {
    input: {},
    canonicalInput: "{}",
    facts: {
      summary: "test",
      orderNumber: "A-1002",
      customerId: DANA,
      orderStatus: "delivered",
      orderTotalCents: 25000,
      refundableCents: 25000,
    },
    isKnownTool: true,
    accountAction: true,
    sideEffect: true,
    state: { verifiedCustomerId: DANA, verificationExpiresAt: new Date(now.getTime() + 60_000), now, previousCall: null },
    policy: { version: 1, rules },
    ...over,
  };
}
const refund = (amountCents: number, over: Partial<GateInput> = {}) =>
  call({
    toolName: "refund_order",
    facts: {
      summary: "refund",
      orderNumber: "A-1004",
      customerId: DANA,
      orderStatus: "delivered",
      orderTotalCents: 90000,
      refundableCents: 90000,
      amountCents,
      totals: NONE,
    },
    ...over,
  });

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
    const { verdict } = evaluateGates(
      call({
        toolName: "refund_order",
        facts: {
          summary: "r",
          orderNumber: "A-1001",
          customerId: DANA,
          orderStatus: "delivered",
          orderTotalCents: 4250,
          refundableCents: 1000,
          amountCents: 4250,
          totals: NONE,
        },
      }),
    );
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
    const { verdict } = evaluateGates(
      call({
        toolName: "lookup_order",
        sideEffect: false,
        state: { verifiedCustomerId: null, verificationExpiresAt: null, now, previousCall: null },
      }),
    );
    expect(verdict).toMatchObject({ decision: "deny", gate: "verified_customer", retryable: true });
    expect(verdict.reason).toMatch(/verify_customer first/);
  });

  it("denies after verification expired", () => {
    const { verdict } = evaluateGates(
      call({
        toolName: "lookup_order",
        state: { verifiedCustomerId: DANA, verificationExpiresAt: new Date(now.getTime() - 1), now, previousCall: null },
      }),
    );
    expect(verdict.reason).toMatch(/expired/);
  });

  it("denies an order of another customer", () => {
    const { verdict } = evaluateGates(
      call({ toolName: "lookup_order", facts: { summary: "x", orderNumber: "A-2001", customerId: "cust_sam" } }),
    );
    expect(verdict.decision).toBe("deny");
  });

  it("denies tools outside the allowlist and unknown tools", () => {
    expect(evaluateGates(call({ toolName: "delete_database", isKnownTool: false })).verdict.gate).toBe("allowlist");
    const narrowed = { version: 2, rules: { ...rules, allowedTools: ["verify_customer"] } };
    expect(evaluateGates(call({ toolName: "lookup_order", policy: narrowed })).verdict.decision).toBe("deny");
  });

  it("detects the same call twice in a row", () => {
    const { verdict } = evaluateGates(
      call({
        toolName: "lookup_order",
        canonicalInput: '{"order_number":"A-1002"}',
        state: {
          verifiedCustomerId: DANA,
          verificationExpiresAt: null,
          now,
          previousCall: { name: "lookup_order", canonicalInput: '{"order_number":"A-1002"}' },
        },
      }),
    );
    expect(verdict.gate).toBe("identical_call");
  });

  it("asks for every cancellation of a processing order and denies a shipped one", () => {
    expect(
      evaluateGates(
        call({
          toolName: "cancel_order",
          facts: { summary: "c", orderNumber: "A-2001", customerId: DANA, orderStatus: "processing", amountCents: 12900 },
        }),
      ).verdict.decision,
    ).toBe("ask");
    expect(
      evaluateGates(
        call({
          toolName: "cancel_order",
          facts: { summary: "c", orderNumber: "A-1001", customerId: DANA, orderStatus: "delivered", amountCents: 4250 },
        }),
      ).verdict.decision,
    ).toBe("deny");
  });

  it("replacements: automatic up to $200, approval above", () => {
    const rep = (amountCents: number) =>
      call({
        toolName: "create_replacement",
        facts: { summary: "r", orderNumber: "A-1002", customerId: DANA, orderStatus: "delivered", amountCents, totals: NONE },
      });
    expect(evaluateGates(rep(18000)).verdict.decision).toBe("allow");
    expect(evaluateGates(rep(25000)).verdict.decision).toBe("ask");
  });

  it("precedence is deny > defer > ask > allow, and a throwing gate denies", () => {
    const g = (name: string, decision: "allow" | "ask" | "defer" | "deny"): Gate => ({ name, check: () => ({ decision, reason: name }) });
    expect(evaluateGates(refund(1), [g("a", "allow"), g("b", "ask"), g("c", "defer")]).verdict.gate).toBe("c");
    expect(evaluateGates(refund(1), [g("a", "ask"), g("d", "deny"), g("c", "defer")]).verdict.gate).toBe("d");
    expect(evaluateGates(refund(1), [g("a", "allow"), g("b", "ask")]).verdict.gate).toBe("b");
    const boom: Gate = {
      name: "boom",
      check: () => {
        throw new Error("bug");
      },
    };
    const { verdict } = evaluateGates(refund(1), [g("a", "allow"), boom]);
    expect(verdict.decision).toBe("deny");
  });
});

describe("limits apply to totals: splitting never gets around a band", () => {
  // A-1002 is a $250.00 order whose refund needs a reviewer. Each row: what was done before, what waits, what the same
  // turn asks, what this call asks → the decision. The attack from the issue: $90, then another $90, then $70.
  const a1002 = (amountCents: number, t: Partial<MoneyTotals>, refundableCents = 25000) =>
    call({
      toolName: "refund_order",
      facts: {
        summary: "refund",
        orderNumber: "A-1002",
        customerId: DANA,
        orderStatus: "delivered",
        orderTotalCents: 25000,
        refundableCents,
        amountCents,
        totals: { ...NONE, ...t },
      },
    });
  it.each<[string, number, Partial<MoneyTotals>, number, "allow" | "ask" | "deny"]>([
    ["the first $90: automatic", 9000, {}, 25000, "allow"],
    ["another $90 after $90 was refunded: the order's total is $180 → a person", 9000, { orderDoneCents: 9000 }, 16000, "ask"],
    ["$70 after $180 was refunded → a person", 7000, { orderDoneCents: 18000 }, 7000, "ask"],
    ["$60 while $60 of the same order waits for a decision → a person", 6000, { orderPendingCents: 6000 }, 25000, "ask"],
    ["two $60 refunds in one turn (each sees the other) → a person", 6000, { sameTurnCents: 6000 }, 25000, "ask"],
    ["$50 + $50 in one turn: $100 total stays automatic", 5000, { sameTurnCents: 5000 }, 25000, "allow"],
    [
      "$90 on an order, but the customer had $80 refunded automatically this month → a person",
      9000,
      { customerAutoCents: 8000 },
      25000,
      "ask",
    ],
    [
      "$90 while $70 automatic for the customer is approved and not run yet → a person",
      9000,
      { customerPendingAutoCents: 7000 },
      25000,
      "ask",
    ],
    ["$100 in pieces adding up to more than is refundable → refused", 5000, { orderPendingCents: 22000 }, 25000, "deny"],
  ])("%s", (_name, amount, t, refundable, decision) => {
    expect(evaluateGates(a1002(amount, t, refundable)).verdict.decision).toBe(decision);
  });

  it("totals above the ceiling are refused and escalated, however they are split", () => {
    const { verdict } = evaluateGates(
      call({
        toolName: "refund_order",
        facts: {
          summary: "r",
          orderNumber: "A-1003",
          customerId: DANA,
          orderStatus: "lost",
          orderTotalCents: 82000,
          refundableCents: 42000,
          amountCents: 20000,
          totals: { ...NONE, orderDoneCents: 40000 },
        },
      }),
    );
    expect(verdict).toMatchObject({ decision: "deny", escalate: true });
    expect(verdict.reason).toMatch(/\$200\.00 now; \$400\.00 already refunded on A-1003/);
  });

  it("the reason says what the total is made of (the reviewer reads it in the handoff)", () => {
    const { verdict } = evaluateGates(a1002(9000, { orderDoneCents: 18000 }, 7000 + 9000));
    expect(verdict.decision).toBe("ask");
    expect(verdict.reason).toMatch(/\$90\.00 now; \$180\.00 already refunded on A-1002/);
  });

  it("four eyes count the total too: $150 after $300 refunded needs two approvers", () => {
    const { verdict } = evaluateGates(a1002(15000, { orderDoneCents: 30000 }, 60000));
    expect(verdict).toMatchObject({ decision: "ask", requiredApprovals: 2 });
  });

  it("replacements: a second automatic replacement of the same order is not automatic", () => {
    const rep = (t: Partial<MoneyTotals>) =>
      call({
        toolName: "create_replacement",
        facts: {
          summary: "r",
          orderNumber: "A-2003",
          customerId: DANA,
          orderStatus: "delivered",
          amountCents: 18000,
          totals: { ...NONE, ...t },
        },
      });
    expect(evaluateGates(rep({})).verdict.decision).toBe("allow");
    expect(evaluateGates(rep({ orderDoneCents: 18000 })).verdict.decision).toBe("ask");
    expect(evaluateGates(rep({ sameTurnCents: 18000 })).verdict.decision).toBe("ask");
    expect(evaluateGates(rep({ customerAutoCents: 18000 })).verdict.decision).toBe("ask");
  });

  it("money back and the goods again is never automatic: a replacement of a refunded order, a refund of a replaced one", () => {
    const replacement = evaluateGates(
      call({
        toolName: "create_replacement",
        facts: {
          summary: "r",
          orderNumber: "A-1001",
          customerId: DANA,
          orderStatus: "delivered",
          amountCents: 4250,
          totals: { ...NONE, orderOtherRemedyCents: 4250 },
        },
      }),
    ).verdict;
    expect(replacement).toMatchObject({ decision: "ask", requiredApprovals: 1 });
    expect(replacement.reason).toMatch(/\$42\.50 of A-1001 was already refunded, and a replacement on top is never automatic/);
    const refund = evaluateGates(a1002(1000, { orderOtherRemedyCents: 25000 }, 25000)).verdict;
    expect(refund).toMatchObject({ decision: "ask", requiredApprovals: 1 });
    expect(refund.reason).toMatch(/A-1002 was already replaced \(worth \$250\.00\), and a refund on top is never automatic/);
    // Facts recorded before the other remedy was read (a what-if over old calls) judge as before.
    expect(evaluateGates(a1002(1000, {}, 25000)).verdict.decision).toBe("allow");
  });

  it.each([
    [
      "refund without its totals",
      "refund_order",
      { summary: "r", orderNumber: "A-1002", customerId: DANA, amountCents: 100, refundableCents: 25000 },
    ],
    [
      "refund without the refundable balance",
      "refund_order",
      { summary: "r", orderNumber: "A-1002", customerId: DANA, amountCents: 100, totals: NONE },
    ],
    [
      "refund without an amount",
      "refund_order",
      { summary: "r", orderNumber: "A-1002", customerId: DANA, refundableCents: 25000, totals: NONE },
    ],
    [
      "replacement without the order's value",
      "create_replacement",
      { summary: "r", orderNumber: "A-1002", customerId: DANA, totals: NONE },
    ],
    ["replacement without its totals", "create_replacement", { summary: "r", orderNumber: "A-1002", customerId: DANA, amountCents: 100 }],
  ])("a missing fact is never a clear: %s → deny", (_name, toolName, facts) => {
    expect(evaluateGates(call({ toolName, facts })).verdict.decision).toBe("deny");
  });
});
