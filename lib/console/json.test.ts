import { describe, expect, it } from "vitest";
import { jsonify } from "./json";

// What JSON itself makes of a value (bigints as strings): jsonify must give the same, whatever it does inside.
const throughJson = (v: unknown) => JSON.parse(JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? x.toString() : x)));

describe("jsonify", () => {
  it("gives what a round trip through JSON gives", () => {
    const decimalLike = { toJSON: () => "12.50" }; // as Prisma's Decimal
    const cases: unknown[] = [
      { at: new Date("2026-12-04T20:00:00.000Z"), n: 12n, s: "x", b: true, z: null },
      [1, undefined, () => 1, Symbol("s"), new Date(0), 5n, Number.NaN, Number.POSITIVE_INFINITY, -0],
      { gone: undefined, fn: () => 1, sym: Symbol("s"), kept: 1, nested: { deeper: [{ at: new Date(1), n: -3n }] } },
      { invalid: new Date(Number.NaN), decimal: decimalLike, list: [decimalLike] },
      { map: new Map([["a", 1]]), set: new Set([1]), bytes: new Uint8Array([1, 2]) },
      { toJSON: () => ({ replaced: new Date(2) }) },
      [new String("boxed"), new Number(2), new Boolean(false)],
      "text",
      42,
      null,
      [],
      {},
    ];
    for (const c of cases) expect(jsonify(c)).toStrictEqual(throughJson(c));
  });

  it("returns a copy: changing it leaves the source as it was", () => {
    const source = { a: { b: [1, 2] } };
    const copy = jsonify(source) as { a: { b: number[] } };
    copy.a.b.push(3);
    expect(source.a.b).toEqual([1, 2]);
  });
});
