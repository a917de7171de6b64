// The shop's policy as an admin edits it: every rule of lib/policy/policy.ts with a plain-language label, how its
// value is written in the form (dollars and cents, hours, a list of tools…), the checks between rules, and the
// difference between two versions in words. Shared by the form (instant inline errors) and the server (which
// checks again before publishing). No server imports: the client bundle includes this file.
import { formatCents } from "@/lib/money";
import { type PolicyRules, policyRulesSchema } from "@/lib/policy/policy";

export type FieldKind =
  | "cents" // money in integer cents, written in dollars with cents
  | "micros" // model spend in micro-USD, written in dollars (up to 6 decimals)
  | "count" // a whole number
  | "decimal" // a positive number (hours may be fractional)
  | "boolean"
  | "statuses" // order statuses
  | "tools"; // tool names

export interface PolicyField {
  /** dotted path into the rules, e.g. "refund.autoMaxCents" */
  path: string;
  label: string;
  hint?: string;
  kind: FieldKind;
  /** unit shown after a number ("hours") */
  unit?: string;
  /** upper bound of numbers, in the field's stored unit */
  max?: number;
}

export interface PolicyGroup {
  id: string;
  title: string;
  description: string;
  fields: PolicyField[];
}

export const ORDER_STATUSES = ["processing", "shipped", "delivered", "lost", "cancelled"] as const;

/** What each tool does, in words (the form's checkboxes; the change history). */
export const TOOL_LABELS: Record<string, string> = {
  verify_customer: "Verify a customer (email + order number, or a code)",
  send_verification_code: "Mail a one-time code to the customer",
  lookup_order: "Look up an order",
  list_orders: "List a customer's orders",
  refund_order: "Refund an order",
  create_replacement: "Send a replacement",
  cancel_order: "Cancel an order",
  update_shipping_address: "Change a delivery address",
  escalate_to_human: "Hand the conversation to a person",
};

/** The agent must always be able to hand a conversation to a person (DESIGN §2.3). */
export const REQUIRED_TOOLS = ["escalate_to_human"] as const;

export const POLICY_GROUPS: readonly PolicyGroup[] = [
  {
    id: "refunds",
    title: "Refunds",
    description:
      "Limits apply to totals: what was already refunded on the order, plus what waits for approval, plus every other refund the agent asks for at the same time.",
    fields: [
      { path: "refund.autoMaxCents", label: "Refunds run automatically up to", kind: "cents" },
      {
        path: "refund.twoApproversFromCents",
        label: "Two different people must approve from",
        hint: "Four-eyes threshold: at least the automatic limit.",
        kind: "cents",
      },
      {
        path: "refund.approvalMaxCents",
        label: "Refused above (a person is asked to look at the case)",
        hint: "Above this, nobody can approve in the queue. At least the two-approver threshold.",
        kind: "cents",
      },
      {
        path: "refund.autoPerCustomerMaxCents",
        label: "Automatic refunds per customer, in total, at most",
        hint: "All of a customer's orders together; beyond it a person approves. At least the automatic limit.",
        kind: "cents",
      },
      { path: "refund.autoPerCustomerWindowDays", label: "…over the last", kind: "count", unit: "days", max: 366 },
    ],
  },
  {
    id: "replacements",
    title: "Replacements",
    description: "A replacement's value counts with the order's earlier replacements.",
    fields: [
      { path: "replacement.autoMaxCents", label: "Replacements run automatically up to", kind: "cents" },
      {
        path: "replacement.autoPerCustomerMaxCents",
        label: "Automatic replacements per customer, in total, at most",
        hint: "At least the automatic limit.",
        kind: "cents",
      },
      { path: "replacement.autoPerCustomerWindowDays", label: "…over the last", kind: "count", unit: "days", max: 366 },
    ],
  },
  {
    id: "orders",
    title: "Cancellations and address changes",
    description: "Cancelling cannot be undone; an address can only change before the parcel leaves.",
    fields: [
      { path: "cancellation.requiresApproval", label: "Every cancellation needs a person's confirmation", kind: "boolean" },
      { path: "addressChange.allowedStatuses", label: "A delivery address may change while the order is", kind: "statuses" },
    ],
  },
  {
    id: "timing",
    title: "Approvals and verification",
    description: "An approval nobody decides in time expires; the customer is told nothing was done.",
    fields: [
      { path: "approvalTtlHours", label: "Approval requests expire after", kind: "decimal", unit: "hours", max: 720 },
      { path: "verificationTtlMinutes", label: "A customer's verification lasts", kind: "decimal", unit: "minutes", max: 1440 },
    ],
  },
  {
    id: "tools",
    title: "What the agent may do",
    description: "The agent is only offered these tools; a call to any other is refused.",
    fields: [{ path: "allowedTools", label: "Allowed tools", kind: "tools" }],
  },
  {
    id: "budgets",
    title: "Budgets",
    description: "Guards, not goals: a run that reaches one is summarised and handed to a person.",
    fields: [
      { path: "budgets.maxTurns", label: "Model turns per run", kind: "count", max: 200 },
      { path: "budgets.tokenBudget", label: "Tokens per run", kind: "count", max: 10_000_000 },
      { path: "budgets.wallTimeSeconds", label: "Working time per run", kind: "count", unit: "seconds", max: 86_400 },
      { path: "budgets.maxRequestAttempts", label: "Model requests per run (retries included)", kind: "count", max: 100 },
      { path: "budgets.maxToolAttempts", label: "Attempts per tool call", kind: "count", max: 20 },
      { path: "budgets.maxRunCostMicros", label: "Model spend per run", kind: "micros" },
      { path: "budgets.maxConversationCostMicros", label: "Model spend per conversation", kind: "micros" },
      { path: "budgets.maxShopDailyCostMicros", label: "Model spend per day, whole shop", kind: "micros" },
    ],
  },
  {
    id: "limits",
    title: "Widget limits",
    description: "What the public chat accepts before it asks visitors to slow down.",
    fields: [
      { path: "limits.messagesPerMinutePerConversation", label: "Messages per minute, per conversation", kind: "count", max: 1000 },
      { path: "limits.messagesPerMinutePerIp", label: "Messages per minute, per visitor address", kind: "count", max: 10_000 },
      { path: "limits.messagesPerMinutePerShop", label: "Messages per minute, whole shop", kind: "count", max: 1_000_000 },
      { path: "limits.conversationsPerHourPerIp", label: "New conversations per hour, per visitor address", kind: "count", max: 10_000 },
    ],
  },
];

export const POLICY_FIELDS: readonly PolicyField[] = POLICY_GROUPS.flatMap((g) => g.fields);

const fieldByPath = new Map(POLICY_FIELDS.map((f) => [f.path, f]));

export function policyField(path: string): PolicyField | undefined {
  return fieldByPath.get(path);
}

export function getPath(obj: unknown, path: string): unknown {
  let cur = obj;
  for (const key of path.split(".")) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split(".");
  let cur = obj;
  for (const key of keys.slice(0, -1)) {
    if (typeof cur[key] !== "object" || cur[key] === null) cur[key] = {};
    cur = cur[key] as Record<string, unknown>;
  }
  cur[keys[keys.length - 1]!] = value;
}

// ---------------------------------------------------------------------------------------------
// The form's values: text as typed for numbers, booleans, lists

export type PolicyFormValue = string | boolean | string[];
export type PolicyFormValues = Record<string, PolicyFormValue>;
/** Field path → what is wrong with it, in words. */
export type FieldErrors = Record<string, string>;

/** Dollars with at most `decimals` decimals: "100", "100.5", "$1,250.00". */
function parseDollars(text: string, decimals: number): number | null {
  const t = text.trim().replace(/^\$\s*/, "");
  const m = t.match(new RegExp(`^(\\d{1,3}(?:,\\d{3})+|\\d+)(?:\\.(\\d{1,${decimals}}))?$`));
  if (!m) return null;
  const whole = Number(m[1]!.replace(/,/g, ""));
  const frac = (m[2] ?? "").padEnd(decimals, "0");
  const scale = 10 ** decimals;
  const value = whole * scale + Number(frac || "0");
  return Number.isSafeInteger(value) ? value : null;
}

/** Micro-USD as dollars without trailing zeros beyond the cents: 500000 → "0.50", 12500 → "0.0125". */
export function formatMicros(micros: number): string {
  const s = (micros / 1_000_000).toFixed(6).replace(/0+$/, "");
  const [whole, frac = ""] = s.split(".");
  return `${whole}.${frac.padEnd(2, "0")}`;
}

export function formValuesOf(rules: PolicyRules): PolicyFormValues {
  const out: PolicyFormValues = {};
  for (const f of POLICY_FIELDS) {
    const v = getPath(rules, f.path);
    if (f.kind === "cents") out[f.path] = (Number(v) / 100).toFixed(2);
    else if (f.kind === "micros") out[f.path] = formatMicros(Number(v));
    else if (f.kind === "boolean") out[f.path] = Boolean(v);
    else if (f.kind === "statuses" || f.kind === "tools") out[f.path] = [...((v as string[]) ?? [])];
    else out[f.path] = String(v);
  }
  return out;
}

/**
 * The rules the form's values say, or what is wrong with them (field by field, in words). `knownTools`: the tools
 * the product has (the server passes its registry).
 */
export function rulesFromForm(
  values: PolicyFormValues,
  knownTools: readonly string[],
): { rules: PolicyRules; errors: null } | { rules: null; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const raw: Record<string, unknown> = {};
  for (const f of POLICY_FIELDS) {
    const v = values[f.path];
    if (f.kind === "boolean") {
      setPath(raw, f.path, v === true);
      continue;
    }
    if (f.kind === "statuses" || f.kind === "tools") {
      setPath(raw, f.path, Array.isArray(v) ? v : []);
      continue;
    }
    const text = typeof v === "string" ? v.trim() : "";
    if (!text) {
      errors[f.path] = "Required.";
      continue;
    }
    let n: number | null;
    if (f.kind === "cents") n = parseDollars(text, 2);
    else if (f.kind === "micros") n = parseDollars(text, 6);
    else if (f.kind === "count") n = /^\d+$/.test(text.replace(/,/g, "")) ? Number(text.replace(/,/g, "")) : null;
    else n = /^\d+(\.\d{1,2})?$/.test(text) ? Number(text) : null;
    if (n === null) {
      errors[f.path] =
        f.kind === "cents"
          ? "Write an amount in dollars, e.g. 100.00."
          : f.kind === "micros"
            ? "Write an amount in dollars, e.g. 0.50."
            : f.kind === "count"
              ? "Write a whole number."
              : "Write a number, e.g. 24 or 0.5.";
      continue;
    }
    setPath(raw, f.path, n);
  }
  const problems = policyProblems(raw, knownTools);
  for (const [path, message] of Object.entries(problems)) errors[path] ??= message;
  if (Object.keys(errors).length) return { rules: null, errors };
  return { rules: policyRulesSchema.parse(raw), errors: null };
}

/**
 * What is wrong with a set of rules (empty when nothing is): the schema, bounds, and the rules between fields —
 * the automatic limit ≤ the two-approver threshold ≤ the refusal ceiling, totals per customer at least the
 * automatic limit, model spend per run ≤ per conversation ≤ per day, known tools only, the hand-off tool kept.
 */
export function policyProblems(raw: unknown, knownTools: readonly string[]): FieldErrors {
  const errors: FieldErrors = {};
  const parsed = policyRulesSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = issue.path.join(".");
      const field = policyField(path);
      errors[path || "rules"] ??= field ? describeIssue(field, issue.code) : `${path || "rules"}: ${issue.message}`;
    }
  }
  // The rules between fields are checked wherever their values are there, so every problem shows at once.
  const r = parsed.success ? parsed.data : raw;
  const num = (path: string) => {
    const v = getPath(r, path);
    return typeof v === "number" && Number.isFinite(v) ? v : null;
  };
  for (const f of POLICY_FIELDS) {
    const v = num(f.path);
    if (v === null || errors[f.path]) continue;
    if ((f.kind === "count" || f.kind === "decimal") && v <= 0) errors[f.path] = "Must be more than 0.";
    else if (f.max !== undefined && v > f.max) errors[f.path] = `At most ${f.max.toLocaleString("en-US")}.`;
    else if (f.kind === "micros" && v <= 0) errors[f.path] = "Must be more than $0.00.";
  }
  const atLeast = (path: string, minPath: string, what: string, format: (n: number) => string = formatCents) => {
    const v = num(path);
    const min = num(minPath);
    if (v !== null && min !== null && v < min && !errors[minPath]) errors[path] ??= `Must be at least ${what} (${format(min)}).`;
  };
  atLeast("refund.twoApproversFromCents", "refund.autoMaxCents", "the automatic limit");
  atLeast("refund.approvalMaxCents", "refund.twoApproversFromCents", "the two-approver threshold");
  atLeast("refund.autoPerCustomerMaxCents", "refund.autoMaxCents", "the automatic limit");
  atLeast("replacement.autoPerCustomerMaxCents", "replacement.autoMaxCents", "the automatic limit");
  const dollars = (m: number) => `$${formatMicros(m)}`;
  atLeast("budgets.maxConversationCostMicros", "budgets.maxRunCostMicros", "the spend per run", dollars);
  atLeast("budgets.maxShopDailyCostMicros", "budgets.maxConversationCostMicros", "the spend per conversation", dollars);
  atLeast("limits.messagesPerMinutePerShop", "limits.messagesPerMinutePerIp", "the limit per visitor address", String);
  const allowedTools = getPath(r, "allowedTools");
  if (Array.isArray(allowedTools) && !errors.allowedTools) {
    const unknownTools = allowedTools.filter((t) => !knownTools.includes(t));
    if (unknownTools.length) errors.allowedTools = `Unknown tools: ${unknownTools.join(", ")}.`;
    else if (new Set(allowedTools).size !== allowedTools.length) errors.allowedTools = "A tool is listed twice.";
    else if (REQUIRED_TOOLS.some((t) => !allowedTools.includes(t)))
      errors.allowedTools = "The agent must always be able to hand the conversation to a person.";
  }
  const statuses = getPath(r, "addressChange.allowedStatuses");
  if (Array.isArray(statuses) && !errors["addressChange.allowedStatuses"]) {
    const bad = statuses.filter((x) => !(ORDER_STATUSES as readonly string[]).includes(x));
    if (bad.length) errors["addressChange.allowedStatuses"] = `Unknown order statuses: ${bad.join(", ")}.`;
  }
  return errors;
}

function describeIssue(field: PolicyField, code: string): string {
  if (code === "invalid_type") return "Required.";
  if (code === "too_small") return field.kind === "cents" ? "Cannot be negative." : "Must be more than 0.";
  if (code === "too_big") return field.max !== undefined ? `At most ${field.max.toLocaleString("en-US")}.` : "Too large.";
  return "Not a valid value.";
}

// ---------------------------------------------------------------------------------------------
// Differences in words

/** A field's value as people read it: "$100.00", "24 hours", "yes", "Refund an order, Cancel an order". */
export function describeValue(field: PolicyField, value: unknown): string {
  switch (field.kind) {
    case "cents":
      return formatCents(Number(value));
    case "micros":
      return `$${formatMicros(Number(value))}`;
    case "boolean":
      return value ? "yes" : "no";
    case "statuses": {
      const list = (value as string[]) ?? [];
      return list.length ? list.join(", ") : "never";
    }
    case "tools": {
      const list = (value as string[]) ?? [];
      return list.length ? list.map((t) => TOOL_LABELS[t] ?? t).join(", ") : "none";
    }
    default:
      return `${Number(value).toLocaleString("en-US")}${field.unit ? ` ${field.unit}` : ""}`;
  }
}

export interface PolicyChange {
  path: string;
  before: unknown;
  after: unknown;
  /** the change in words: "Refunds run automatically up to: $100.00 → $80.00" */
  text: string;
}

function groupTitleOf(path: string): string {
  return POLICY_GROUPS.find((g) => g.fields.some((f) => f.path === path))?.title ?? "";
}

/** Every rule that differs between two versions, in the form's order, each said in words. */
export function policyChanges(before: PolicyRules, after: PolicyRules): PolicyChange[] {
  const changes: PolicyChange[] = [];
  for (const f of POLICY_FIELDS) {
    const a = getPath(before, f.path);
    const b = getPath(after, f.path);
    if (JSON.stringify(a) === JSON.stringify(b)) continue;
    const label = f.label.startsWith("…") ? `${groupTitleOf(f.path)}: ${f.label.slice(1)}` : f.label;
    let text: string;
    if (f.kind === "tools" || f.kind === "statuses") {
      const was = (a as string[]) ?? [];
      const now = (b as string[]) ?? [];
      const name = (x: string) => (f.kind === "tools" ? (TOOL_LABELS[x] ?? x) : x);
      const added = now.filter((x) => !was.includes(x)).map(name);
      const removed = was.filter((x) => !now.includes(x)).map(name);
      if (!added.length && !removed.length) continue; // the same set, in another order
      text = `${label}: ${[added.length ? `added ${added.join(", ")}` : "", removed.length ? `removed ${removed.join(", ")}` : ""]
        .filter(Boolean)
        .join("; ")}`;
    } else {
      text = `${label}: ${describeValue(f, a)} → ${describeValue(f, b)}`;
    }
    changes.push({ path: f.path, before: a, after: b, text });
  }
  return changes;
}
