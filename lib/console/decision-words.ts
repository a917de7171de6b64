import { formatCents } from "@/lib/money";
import { type DateInput, formatWhen } from "./dates";
import { diffArguments } from "./diff";

// A handoff's decision in words — who decided what, when and why — for the handoff page, the queue card and the
// run page. No JSON: the raw record stays behind a "technical details" disclosure.

export interface DecisionFacts {
  kind: string;
  status: string;
  toolName: string | null;
  proposedInput: unknown;
  editedInput: unknown;
  requiredApprovals: number;
  /** every approval, oldest first (four eyes: two different people) */
  approvals: ReadonlyArray<{ name: string | null; at: DateInput }>;
  decidedBy: { name: string | null } | null;
  decidedAt: DateInput | null;
  decisionReason: string | null;
  /** Handoff.decision: approve | deny | edit | expired | takeover */
  decision?: string | null;
  /** the call the handoff was about, as it stands now */
  call: { status: string; result: unknown } | null;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {});
const str = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim() : undefined);

const nameOf = (n: string | null | undefined) => n ?? "a reviewer";

/** "Raj and Ada", "Raj, Ada and Sol" */
export function namesInWords(names: ReadonlyArray<string | null>): string {
  const all = names.map(nameOf);
  return all.length <= 1 ? (all[0] ?? "") : `${all.slice(0, -1).join(", ")} and ${all[all.length - 1]}`;
}

/** A field's value as a reviewer reads it: amounts in dollars, text in quotes. */
function valueInWords(path: string, v: unknown): string {
  if (v === undefined) return "(none)";
  if (typeof v === "number" && /(^|_)cents$/.test(path.split(".").pop() ?? "")) return formatCents(v);
  if (typeof v === "string") return `“${v}”`;
  return JSON.stringify(v);
}

/** "$250.00 → $150.00", or "reason: “damaged” → “partial”; address.line1: …" for other fields. */
export function editInWords(proposed: unknown, edited: unknown): string {
  // The amount first: it is what a reviewer edits most and what money moves by.
  const changes = diffArguments(proposed, edited)
    .filter((r) => r.change !== "same")
    .sort((a, b) => Number(b.path === "amount_cents") - Number(a.path === "amount_cents"));
  if (!changes.length) return "no change";
  return changes
    .map((c) => {
      const change = `${valueInWords(c.path, c.before)} → ${valueInWords(c.path, c.after)}`;
      return c.path === "amount_cents" && changes.length === 1
        ? change
        : `${c.path.replace(/_cents$/, "").replace(/[_.]/g, " ")}: ${change}`;
    })
    .join("; ");
}

/**
 * Why the gates refused a call, in the reviewer's words: the first clause of the refusal's message (the rest of it
 * tells the model what to do), lower-cased to follow a dash or a colon — "refunds on A-1003 would total $600.00 …".
 */
function refusalInWords(r: Obj): string | undefined {
  const clause = str(r.message)
    ?.split(/[:.]\s/)[0]
    ?.trim();
  if (!clause) return undefined;
  return /^[A-Z][a-z]/.test(clause) ? clause[0]!.toLowerCase() + clause.slice(1) : clause;
}

/** ": <why>" after a clause, or nothing when there is no why. */
const because = (why: string | undefined) => (why ? `: ${why}` : "");

/** What the decided call did, from the result the server recorded ("$250.00 refunded"). */
export function effectInWords(toolName: string | null, call: DecisionFacts["call"]): string | null {
  if (!call) return null;
  const r = obj(call.result);
  switch (call.status) {
    case "SUCCEEDED":
      switch (toolName) {
        case "refund_order":
          return `${str(r.amount) ?? "the amount"} refunded`;
        case "cancel_order":
          return `order cancelled${str(r.refunded) ? `, ${str(r.refunded)} refunded` : ""}`;
        case "create_replacement":
          return `replacement sent${str(r.tracking) ? ` (tracking ${str(r.tracking)})` : ""}`;
        case "update_shipping_address":
          return "delivery address changed";
        default:
          return "done";
      }
    case "FAILED":
      return `but it failed${str(r.message) ? `: ${str(r.message)}` : ""}`;
    case "DENIED":
      // Approved, then refused where it was to act: judged again on what was done by then (another approval of the
      // same order had passed the ceiling first; lib/runtime/judged-again).
      return `but not done${because(refusalInWords(r))}${r.escalated ? "; passed to a person" : ""}`;
    case "APPROVED":
    case "EXECUTING":
      return "running now";
    case "RETRY_WAIT":
      return "a temporary failure; it will be retried";
    default:
      return null;
  }
}

/** What the decided call did, as a sentence for the reviewer's confirmation ("The customer was refunded $250.00."). */
export function effectSentence(toolName: string | null, call: DecisionFacts["call"]): string | null {
  if (!call) return null;
  const r = obj(call.result);
  switch (call.status) {
    case "SUCCEEDED":
      switch (toolName) {
        case "refund_order":
          return `The customer was refunded ${str(r.amount) ?? "the amount"}.`;
        case "cancel_order":
          return `The order was cancelled${str(r.refunded) ? ` and ${str(r.refunded)} refunded` : ""}.`;
        case "create_replacement":
          return `A replacement was sent${str(r.tracking) ? ` (tracking ${str(r.tracking)})` : ""}.`;
        case "update_shipping_address":
          return "The delivery address was changed.";
        default:
          return "It ran.";
      }
    case "DENIED":
      // A reviewer's denial says nothing more; a refusal by the gates after the approval says why, and who looks next.
      return r.escalated ? `Nothing was done${because(refusalInWords(r))}. A person has been asked to look at it.` : "Nothing was done.";
    case "EXPIRED":
      return "Nothing was done: the request expired.";
    case "FAILED":
      return `It failed${str(r.message) ? `: ${str(r.message)}` : ""}.`;
    case "APPROVED":
    case "EXECUTING":
    case "RETRY_WAIT":
      return "It is approved and still running.";
    default:
      return null;
  }
}

function approvalsInWords(approvals: DecisionFacts["approvals"], fmt: (at: DateInput) => string): string {
  return approvals.map((a, i) => `${i === 0 ? "" : "then by "}${nameOf(a.name)} on ${fmt(a.at)}`).join(", ");
}

/**
 * The decision, one sentence per line:
 *   "Approved by Raj on 1 Dec 2026, 10:42 — $250.00 refunded"
 *   "Edited by Raj: $250.00 → $150.00" + "Approved by Raj on … — $150.00 refunded"
 *   "Approved by Raj on …, then by Ada on … — $460.00 refunded" (four eyes)
 *   "Denied by Rita on …: <reason>"
 * Nothing for an item nobody has acted on yet.
 */
export function decisionInWords(f: DecisionFacts, fmt: (at: DateInput) => string = (at) => formatWhen(at)): string[] {
  const lines: string[] = [];
  const when = f.decidedAt ? ` on ${fmt(f.decidedAt)}` : "";
  const effect = effectInWords(f.toolName, f.call);
  switch (f.status) {
    case "PENDING":
      if (f.approvals.length)
        lines.push(
          `Approved by ${approvalsInWords(f.approvals, fmt)} — waiting for ${f.requiredApprovals - f.approvals.length === 1 ? "a second, different reviewer" : `${f.requiredApprovals - f.approvals.length} more reviewers`}`,
        );
      break;
    case "EDITED":
    case "APPROVED": {
      if (f.status === "EDITED" && f.editedInput) {
        const editor = f.approvals.length === 1 ? nameOf(f.approvals[0]!.name) : null;
        lines.push(`${editor ? `Edited by ${editor}` : "Edited before approval"}: ${editInWords(f.proposedInput, f.editedInput)}`);
      }
      const approvers = f.approvals.length
        ? approvalsInWords(f.approvals, fmt)
        : `${nameOf(f.decidedBy?.name)}${f.decidedAt ? ` on ${fmt(f.decidedAt)}` : ""}`;
      lines.push(`Approved by ${approvers}${effect ? ` — ${effect}` : ""}`);
      if (f.decisionReason) lines.push(`Note: ${f.decisionReason}`);
      break;
    }
    case "DENIED":
      lines.push(`Denied by ${nameOf(f.decidedBy?.name)}${when}${f.decisionReason ? `: ${f.decisionReason}` : ""}`);
      break;
    case "EXPIRED":
      if (f.approvals.length) lines.push(`Approved by ${approvalsInWords(f.approvals, fmt)}, but the other approval never came`);
      lines.push(`Expired${when} without a decision — nothing was done`);
      break;
    case "RESOLVED":
      if (f.decision === "takeover") {
        lines.push(`Taken over by ${nameOf(f.decidedBy?.name)}${when}`);
        break;
      }
      lines.push(
        `Resolved${f.decidedBy ? ` by ${nameOf(f.decidedBy.name)}` : ""}${when}${f.decisionReason ? `: ${f.decisionReason}` : ""}`,
      );
      break;
    case "CANCELLED":
      lines.push(`Cancelled${when}${f.decisionReason ? `: ${f.decisionReason}` : ""}`);
      break;
    default:
      lines.push(`${f.status.toLowerCase()}${when}`);
  }
  return lines;
}

/**
 * A decided item in a few words, for a queue card: "Approved by Raj and Ada", "Denied by Rita" — and, when its call is
 * known, an approved call that was not done after all: "Approved by Raj — not done" (refused where it was to act),
 * "Approved by Raj — failed".
 */
export function decidedSummary(
  f: Pick<DecisionFacts, "status" | "approvals" | "decidedBy" | "decision"> & { call?: { status: string } | null },
): string {
  const approvers = f.approvals.length ? namesInWords(f.approvals.map((a) => a.name)) : nameOf(f.decidedBy?.name);
  const after = f.call?.status === "DENIED" ? " — not done" : f.call?.status === "FAILED" ? " — failed" : "";
  switch (f.status) {
    case "APPROVED":
      return `Approved by ${approvers}${after}`;
    case "EDITED":
      return `Edited and approved by ${approvers}${after}`;
    case "DENIED":
      return `Denied by ${nameOf(f.decidedBy?.name)}`;
    case "EXPIRED":
      return "Expired without a decision";
    case "RESOLVED":
      if (f.decision === "takeover") return `Taken over by ${nameOf(f.decidedBy?.name)}`;
      return f.decidedBy ? `Resolved by ${nameOf(f.decidedBy.name)}` : "Resolved";
    case "CANCELLED":
      return "Cancelled";
    default:
      return f.status.toLowerCase();
  }
}
