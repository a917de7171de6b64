/** One field of a tool call's arguments, before and after a reviewer's edit. */
export interface FieldDiff {
  /** dotted path, e.g. "amount_cents" or "address.line1" */
  path: string;
  change: "same" | "changed" | "added" | "removed";
  before?: unknown;
  after?: unknown;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Leaves of a JSON object by dotted path; arrays are compared whole (tool inputs rarely hold them). */
function flatten(value: unknown, prefix = "", out = new Map<string, unknown>()): Map<string, unknown> {
  if (isPlainObject(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else if (prefix) {
    out.set(prefix, value);
  }
  return out;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The field-by-field difference between the arguments the model proposed and the ones a reviewer edited,
 * in the original's key order with new fields last. Shown before an edit is sent, so nothing changes unseen.
 */
export function diffArguments(before: unknown, after: unknown): FieldDiff[] {
  const a = flatten(before);
  const b = flatten(after);
  const rows: FieldDiff[] = [];
  for (const [path, value] of a) {
    if (!b.has(path)) rows.push({ path, change: "removed", before: value });
    else rows.push({ path, change: sameJson(value, b.get(path)) ? "same" : "changed", before: value, after: b.get(path) });
  }
  for (const [path, value] of b) if (!a.has(path)) rows.push({ path, change: "added", after: value });
  return rows;
}

export function hasChanges(rows: FieldDiff[]): boolean {
  return rows.some((r) => r.change !== "same");
}
