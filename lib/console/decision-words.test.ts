import { describe, expect, it } from "vitest";
import { type DecisionFacts, decidedSummary, decisionInWords, editInWords, effectSentence } from "./decision-words";

const at = (hm: string) => `2026-12-01T${hm}:00Z`;
const fmt = (d: string | number | Date) => new Date(d).toISOString().slice(11, 16); // "10:42": the format is dates.ts's business

const refund = (f: Partial<DecisionFacts>): DecisionFacts => ({
  kind: "APPROVAL",
  status: "PENDING",
  toolName: "refund_order",
  proposedInput: { order_number: "A-1002", amount_cents: 25000, reason: "arrived damaged" },
  editedInput: null,
  requiredApprovals: 1,
  approvals: [],
  decidedBy: null,
  decidedAt: null,
  decisionReason: null,
  call: null,
  ...f,
});

// A refused call's result as the gates write it (lib/runtime/gating + openCeilingEscalation): its message is the model's.
const ceilingRefusal = {
  gate: "refund_policy",
  message:
    "Refunds on A-1003 would total $600.00 ($300.00 now; $300.00 already refunded on A-1003), above $500.00: the agent cannot make them and they cannot be approved in the queue. A person has been asked to review this case; tell the customer so and do not retry.",
  escalated: true,
  handoff_id: "b8daf638-0b90-4639-9f70-dfa314a303c0",
  is_retryable: false,
  error_category: "business_rule",
};

describe("a decision in words", () => {
  it.each([
    { name: "nobody acted yet", f: refund({}), lines: [] },
    {
      name: "approved, with what it did",
      f: refund({
        status: "APPROVED",
        approvals: [{ name: "Raj", at: at("10:42") }],
        decidedBy: { name: "Raj" },
        decidedAt: at("10:42"),
        call: { status: "SUCCEEDED", result: { status: "refunded", amount: "$250.00" } },
      }),
      lines: ["Approved by Raj on 10:42 — $250.00 refunded"],
    },
    {
      name: "four eyes: both approvers, in order, with times",
      f: refund({
        status: "APPROVED",
        requiredApprovals: 2,
        approvals: [
          { name: "Raj", at: at("10:42") },
          { name: "Ada", at: at("11:05") },
        ],
        decidedBy: { name: "Ada" },
        decidedAt: at("11:05"),
        call: { status: "SUCCEEDED", result: { amount: "$460.00" } },
      }),
      lines: ["Approved by Raj on 10:42, then by Ada on 11:05 — $460.00 refunded"],
    },
    {
      name: "the first of two approvals",
      f: refund({ requiredApprovals: 2, approvals: [{ name: "Raj", at: at("10:42") }] }),
      lines: ["Approved by Raj on 10:42 — waiting for a second, different reviewer"],
    },
    {
      name: "edited: the change, then the approval",
      f: refund({
        status: "EDITED",
        editedInput: { order_number: "A-1002", amount_cents: 15000, reason: "arrived damaged" },
        approvals: [{ name: "Raj", at: at("10:42") }],
        decidedBy: { name: "Raj" },
        decidedAt: at("10:42"),
        call: { status: "SUCCEEDED", result: { amount: "$150.00" } },
      }),
      lines: ["Edited by Raj: $250.00 → $150.00", "Approved by Raj on 10:42 — $150.00 refunded"],
    },
    {
      name: "denied, with the reason",
      f: refund({ status: "DENIED", decidedBy: { name: "Rita" }, decidedAt: at("09:15"), decisionReason: "Damage predates delivery" }),
      lines: ["Denied by Rita on 09:15: Damage predates delivery"],
    },
    {
      name: "expired",
      f: refund({ status: "EXPIRED", decidedAt: at("23:00") }),
      lines: ["Expired on 23:00 without a decision — nothing was done"],
    },
    {
      name: "approved, but the call failed afterwards",
      f: refund({
        status: "APPROVED",
        approvals: [{ name: "Raj", at: at("10:42") }],
        call: { status: "FAILED", result: { message: "Only $0.00 of A-1002 is still refundable." } },
      }),
      lines: ["Approved by Raj on 10:42 — but it failed: Only $0.00 of A-1002 is still refundable."],
    },
    {
      name: "an escalation a person took over",
      f: refund({
        kind: "ESCALATION",
        toolName: null,
        status: "RESOLVED",
        decision: "takeover",
        decidedBy: { name: "Sol" },
        decidedAt: at("12:00"),
      }),
      lines: ["Taken over by Sol on 12:00"],
    },
  ])("$name", ({ f, lines }) => {
    const got = decisionInWords(f, fmt);
    expect(got).toEqual(lines);
    for (const line of got) expect(line).not.toMatch(/[{}]/);
  });

  it("describes edits of other fields by name", () => {
    expect(editInWords({ order_number: "A-2001", reason: "wrong size" }, { order_number: "A-2001", reason: "wrong size, confirmed" })).toBe(
      "reason: “wrong size” → “wrong size, confirmed”",
    );
  });

  it("names every approver on a decided card, not only the last", () => {
    expect(
      decidedSummary({
        status: "APPROVED",
        approvals: [
          { name: "Raj", at: at("10:00") },
          { name: "Ada", at: at("10:05") },
        ],
        decidedBy: { name: "Ada" },
      }),
    ).toBe("Approved by Raj and Ada");
    expect(decidedSummary({ status: "DENIED", approvals: [], decidedBy: { name: "Rita" } })).toBe("Denied by Rita");
    // An approved call that was not done after all says so on its card.
    const raj = { approvals: [{ name: "Raj", at: at("10:42") }], decidedBy: { name: "Raj" } };
    expect(decidedSummary({ status: "APPROVED", ...raj, call: { status: "SUCCEEDED" } })).toBe("Approved by Raj");
    expect(decidedSummary({ status: "APPROVED", ...raj, call: { status: "DENIED" } })).toBe("Approved by Raj — not done");
    expect(decidedSummary({ status: "EDITED", ...raj, call: { status: "FAILED" } })).toBe("Edited and approved by Raj — failed");
  });

  it("says what the decided call did", () => {
    expect(effectSentence("refund_order", { status: "SUCCEEDED", result: { amount: "$250.00" } })).toBe(
      "The customer was refunded $250.00.",
    );
    expect(effectSentence("cancel_order", { status: "SUCCEEDED", result: { refunded: "$129.00" } })).toBe(
      "The order was cancelled and $129.00 refunded.",
    );
    expect(effectSentence("refund_order", { status: "DENIED", result: {} })).toBe("Nothing was done.");
    // Approved, then refused where it was to act (another approval of the same order had passed the ceiling first).
    expect(effectSentence("refund_order", { status: "DENIED", result: ceilingRefusal })).toBe(
      "Nothing was done: refunds on A-1003 would total $600.00 ($300.00 now; $300.00 already refunded on A-1003), above $500.00. A person has been asked to look at it.",
    );
  });

  it("an approval whose call was refused after it (the ceiling, judged again where it was to act) says so", () => {
    const f = refund({
      status: "APPROVED",
      approvals: [{ name: "Raj", at: at("10:42") }],
      decidedBy: { name: "Raj" },
      decidedAt: at("10:42"),
      call: { status: "DENIED", result: ceilingRefusal },
    });
    expect(decisionInWords(f, fmt)).toEqual([
      "Approved by Raj on 10:42 — but not done: refunds on A-1003 would total $600.00 ($300.00 now; $300.00 already refunded on A-1003), above $500.00; passed to a person",
    ]);
  });
});
