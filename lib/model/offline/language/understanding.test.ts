import { describe, expect, it } from "vitest";
import { parseConcerns } from "../intents";
import corpus from "./corpus.json";

/**
 * How well the offline model understands customers: a corpus of messages written for this (typos, slang, missing
 * hyphens, roundabout requests, two requests at once, amounts in words, polite, angry, terse and rambling, and
 * messages that ask nothing), each with the concerns a person would read in it. A message passes only when the
 * kinds (in order), the order of each concern and the amount all match.
 */

interface CorpusEntry {
  text: string;
  kinds: string[];
  /** The order each concern is about, aligned with `kinds` (null: none, e.g. a person or "which order?"). */
  orders: Array<string | null>;
  /** The amount the message asks for, in cents, or null when it names none. */
  amountCents: number | null;
}

const entries = corpus as CorpusEntry[];
const PASS_MARK = 0.95;

function read(text: string) {
  const concerns = parseConcerns(text);
  return {
    kinds: concerns.map((c) => c.kind),
    orders: concerns.map((c) => c.order ?? null),
    amountCents: concerns.find((c) => c.amountCents !== undefined)?.amountCents ?? null,
  };
}

const show = (r: { kinds: string[]; orders: Array<string | null>; amountCents: number | null }) =>
  `${r.kinds.map((k, i) => `${k}${r.orders[i] ? ` ${r.orders[i]}` : ""}`).join("; ") || "nothing"}${r.amountCents !== null ? ` (${r.amountCents}¢)` : ""}`;

describe("offline model understanding", () => {
  it("the corpus is large, varied and well-formed", () => {
    expect(entries.length).toBeGreaterThanOrEqual(300);
    expect(new Set(entries.map((e) => e.text)).size).toBe(entries.length);
    for (const e of entries) expect(e.orders.length, e.text).toBe(e.kinds.length);
    const kinds = new Set(entries.flatMap((e) => e.kinds));
    for (const k of ["human", "policy_gap", "cancel", "address", "replace", "refund", "status", "list_orders"]) expect(kinds).toContain(k);
    expect(entries.filter((e) => e.kinds.length === 0).length).toBeGreaterThanOrEqual(15);
    expect(entries.filter((e) => e.kinds.length >= 2).length).toBeGreaterThanOrEqual(25);
  });

  it(`reads at least ${PASS_MARK * 100}% of the corpus right (kinds, orders and amount)`, () => {
    const misses: string[] = [];
    for (const e of entries) {
      const got = read(e.text);
      const ok =
        JSON.stringify(got.kinds) === JSON.stringify(e.kinds) &&
        JSON.stringify(got.orders) === JSON.stringify(e.orders) &&
        got.amountCents === e.amountCents;
      if (!ok) misses.push(`  "${e.text}"\n      expected ${show(e)}\n      got      ${show(got)}`);
    }
    const passed = entries.length - misses.length;
    const score = passed / entries.length;
    console.log(`offline model understanding: ${passed}/${entries.length} (${(score * 100).toFixed(1)}%)`);
    if (misses.length) console.log(`misses:\n${misses.join("\n")}`);
    expect(score).toBeGreaterThanOrEqual(PASS_MARK);
  });

  it("the four messages from the issue are understood", () => {
    expect(read("the jacket from A-1002 showed up torn, I want my money")).toEqual({
      kinds: ["refund"],
      orders: ["A-1002"],
      amountCents: null,
    });
    expect(read("hii, cn u refnd my ordr A1001 pls")).toEqual({ kinds: ["refund"], orders: ["A-1001"], amountCents: null });
    expect(read("is there any way to get what I paid for A-2003 put back on my card?")).toEqual({
      kinds: ["refund"],
      orders: ["A-2003"],
      amountCents: null,
    });
    expect(read("A-1003 never showed up. I want the full $820 back today.")).toEqual({
      kinds: ["refund"],
      orders: ["A-1003"],
      amountCents: 82000,
    });
  });
});
