import { describe, expect, it } from "vitest";
import { diffArguments, hasChanges } from "./diff";

describe("diffArguments", () => {
  it.each([
    {
      name: "a changed amount",
      before: { order_number: "A-1002", amount_cents: 25000, reason: "damaged" },
      after: { order_number: "A-1002", amount_cents: 15000, reason: "damaged" },
      changed: ["amount_cents"],
    },
    {
      name: "nested fields, added and removed keys",
      before: { order_number: "A-2001", address: { line1: "1 Old St", city: "Portland" }, note: "x" },
      after: { order_number: "A-2001", address: { line1: "2 New St", city: "Portland" }, extra: true },
      changed: ["address.line1", "note", "extra"],
    },
    { name: "nothing", before: { a: 1 }, after: { a: 1 }, changed: [] },
  ])("reports $name", ({ before, after, changed }) => {
    const rows = diffArguments(before, after);
    expect(rows.filter((r) => r.change !== "same").map((r) => r.path)).toEqual(changed);
    expect(hasChanges(rows)).toBe(changed.length > 0);
  });

  it("labels each kind of change", () => {
    const rows = diffArguments({ keep: 1, drop: 2, edit: 3 }, { keep: 1, edit: 4, add: 5 });
    expect(rows).toEqual([
      { path: "keep", change: "same", before: 1, after: 1 },
      { path: "drop", change: "removed", before: 2 },
      { path: "edit", change: "changed", before: 3, after: 4 },
      { path: "add", change: "added", after: 5 },
    ]);
  });
});
