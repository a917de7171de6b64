import { type ClauseReading, readClause } from "./cues";
import type { Token } from "./tokens";

/**
 * A message cut into clauses that each carry at most one request: "A-1003 never showed up. I want the full $820
 * back" is two; "cancel A-2001 and send a replacement for A-2003" is two; "refund A-1001 and A-1002" is one (with
 * two orders). Sentences, semicolons and line breaks always cut; a comma or a joining word ("and", "also", "plus",
 * "but", "then", "btw", a dash) cuts only when what follows says something of its own, or has a verb of its own —
 * so an address or a list of orders stays whole.
 */

const SOFT_BOUNDARY = new Set([",", "and", "also", "plus", "but", "then", "btw", "&", "-", "–", "—", "anyway", "oh"]);
const HARD_BOUNDARY = new Set([";", ".", "?", "!", "\n"]);

export interface Clause {
  tokens: Token[];
  reading: ClauseReading;
}

const says = (r: ClauseReading) => r.kind !== undefined || r.problem;

function hardSegments(tokens: Token[]): Token[][] {
  const out: Token[][] = [[]];
  tokens.forEach((t, i) => {
    const prev = tokens[i - 1];
    if (prev && prev.sentence !== t.sentence && out.at(-1)!.length) out.push([]);
    if (t.type === "tabCRLF" || HARD_BOUNDARY.has(t.text)) {
      if (t.type !== "tabCRLF") out.at(-1)!.push(t);
      if (out.at(-1)!.length) out.push([]);
      return;
    }
    out.at(-1)!.push(t);
  });
  return out.filter((s) => s.length);
}

function softPieces(segment: Token[]): Token[][] {
  const pieces: Token[][] = [[]];
  for (const t of segment) {
    const isBoundary = SOFT_BOUNDARY.has(t.norm) && (t.text !== "-" || t.space !== "");
    if (isBoundary && pieces.at(-1)!.length) pieces.push([]);
    pieces.at(-1)!.push(t);
  }
  return pieces;
}

/** The clauses of a message, each with what it asks for (or says went wrong). */
export function splitIntoClauses(tokens: Token[]): Clause[] {
  const clauses: Clause[] = [];
  for (const segment of hardSegments(tokens)) {
    const merged: Clause[] = [];
    for (const piece of softPieces(segment)) {
      const reading = readClause(piece);
      const last = merged.at(-1);
      // A piece that says nothing of its own belongs with the one before ("… to 12 New Street, Springfield",
      // "… and A-1002") — unless it has a verb of its own ("… but keep A-2001"): then it is a clause that asks nothing.
      if (last && !says(reading) && !piece.some((t) => t.pos === "VERB")) {
        last.tokens = [...last.tokens, ...piece];
        last.reading = readClause(last.tokens);
      } else merged.push({ tokens: piece, reading });
    }
    clauses.push(...merged);
  }
  return clauses;
}
