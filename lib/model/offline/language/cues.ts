import { INTENT_TABLE, type TableKind } from "./intent-table";
import { negatedAt, NEGATORS } from "./negation";
import type { Token } from "./tokens";

/** The intent table's cues compiled once, and the scoring of a clause against them. */

type Element =
  /** One token: a word (its norm or lemma), an exact word, a negation or an order number. */
  | { type: "token"; alts: Set<string>; exact: Set<string>; not: boolean; order: boolean; number: boolean }
  | { type: "gap" }
  | { type: "money" };

interface CompiledCue {
  kind: TableKind;
  cue: string;
  weight: number;
  elements: Element[];
  /** The cue states a negation itself ("NOT arrive"): the customer's negation is its meaning, not a denial. */
  negative: boolean;
}

const GAP = 4;

function compile(cue: string): Element[] {
  return cue.split(/\s+/).map((part): Element => {
    if (part === "…") return { type: "gap" };
    if (part === "MONEY") return { type: "money" };
    const words = part.split("|");
    return {
      type: "token",
      alts: new Set(words.filter((w) => /^[^=A-Z]/.test(w))),
      exact: new Set(words.filter((w) => w.startsWith("=")).map((w) => w.slice(1))),
      not: words.includes("NOT"),
      order: words.includes("ORDER"),
      number: words.includes("NUMBER"),
    };
  });
}

const CUES: CompiledCue[] = INTENT_TABLE.flatMap((row) =>
  Object.entries(row.cues).map(([cue, weight]) => {
    const elements = compile(cue);
    return { kind: row.kind, cue, weight, elements, negative: elements.some((e) => e.type === "token" && e.not) };
  }),
);

const SENTENCE_END = new Set([".", "?", "!"]);

/** Where the cue matches starting at token `i`: the index after the match, or -1. */
function matchFrom(tokens: Token[], elements: Element[], i: number, e = 0): number {
  if (e === elements.length) return i;
  const el = elements[e]!;
  if (el.type === "gap") {
    for (let skip = 0; skip <= GAP && i + skip <= tokens.length; skip++) {
      if (skip > 0 && SENTENCE_END.has(tokens[i + skip - 1]!.text)) break;
      const end = matchFrom(tokens, elements, i + skip, e + 1);
      if (end >= 0) return end;
    }
    return -1;
  }
  const t = tokens[i];
  if (!t) return -1;
  if (el.type === "money") {
    if (t.amount === undefined) return -1;
    let j = i;
    while (tokens[j]?.amount === t.amount) j++;
    return matchFrom(tokens, elements, j, e + 1);
  }
  const ok =
    el.alts.has(t.norm) ||
    el.alts.has(t.lemma) ||
    el.exact.has(t.norm) ||
    (el.not && NEGATORS.has(t.norm)) ||
    (el.order && t.order !== undefined) ||
    (el.number && t.type === "number" && t.amount === undefined);
  return ok ? matchFrom(tokens, elements, i + 1, e + 1) : -1;
}

export interface CueMatch {
  kind: TableKind;
  cue: string;
  weight: number;
  start: number;
  end: number;
}

/** Every cue that matches the tokens (each cue once, at its first place the customer does not negate). */
export function matchCues(tokens: Token[]): CueMatch[] {
  const out: CueMatch[] = [];
  for (const cue of CUES) {
    for (let i = 0; i < tokens.length; i++) {
      const end = matchFrom(tokens, cue.elements, i);
      if (end < 0) continue;
      // "I don't want a REFUND" is no refund cue, and neither is "was never DELIVERED" a question whether it was.
      if (!cue.negative && (negatedAt(tokens, i) || tokens.slice(i, end).some((t) => NEGATORS.has(t.norm)))) continue;
      out.push({ kind: cue.kind, cue: cue.cue, weight: cue.weight, start: i, end });
      break;
    }
  }
  return out;
}

export interface ClauseReading {
  /** What the clause asks for, if anything. */
  kind?: Exclude<TableKind, "problem" | "in_transit">;
  /** It says something went wrong (a reason), whether or not it asks for something. */
  problem: boolean;
  /** It says the trouble happened on the way (lost, late, crushed in the post): a delivery problem. */
  inTransit: boolean;
  matches: CueMatch[];
  scores: Partial<Record<TableKind, number>>;
}

const ORDER_OF_KINDS = INTENT_TABLE.map((r) => r.kind);

/** The clause's kind by the table's rule: highest total weight ≥ 1, ties to the earlier row. */
export function readClause(tokens: Token[]): ClauseReading {
  const matches = matchCues(tokens);
  const scores: Partial<Record<TableKind, number>> = {};
  for (const m of matches) scores[m.kind] = (scores[m.kind] ?? 0) + m.weight;
  let kind: ClauseReading["kind"];
  let best = 0;
  for (const k of ORDER_OF_KINDS) {
    if (k === "problem" || k === "in_transit") continue;
    const s = scores[k] ?? 0;
    if (s >= 1 && s > best) {
      kind = k;
      best = s;
    }
  }
  return { kind, problem: (scores.problem ?? 0) >= 1, inTransit: (scores.in_transit ?? 0) >= 1, matches, scores };
}
