import type { Token } from "./tokens";

/**
 * Whether the customer denies a request word: "I don't want a refund, just a replacement", "no need to cancel",
 * "not a refund". wink's negation model marks the words a negation covers (up to the next punctuation); this
 * decides what the negation is about, because not every negated request word is a denial:
 *   "I haven't received my refund"   — the negation is about receiving: the request stands;
 *   "can't you just refund it?"      — a question that pushes for it;
 *   "no I want my money back"        — "no" answers the previous message.
 */

export const NEGATORS = new Set(["not", "never", "no", "n't", "nor", "without"]);

/** Verbs that, between a negation and a request word, make it a complaint about not getting it. */
const RECEIPT = new Set(["receive", "get", "got", "see", "arrive", "come", "hear", "process", "issue", "show", "reach", "go", "find"]);
const MODALS = new Set(["can", "could", "would", "will", "why", "do", "wo", "ca"]);
const PRONOUNS = new Set(["i", "we", "you", "it", "i'm", "i'd"]);

/** Token `i` of a clause is a request word the customer negates. Only negations inside the clause count. */
export function negatedAt(tokens: Token[], i: number): boolean {
  if (!tokens[i]?.negated) return false;
  let n = i - 1;
  while (n >= 0 && !NEGATORS.has(tokens[n]!.norm)) n--;
  if (n < 0) return false;
  const between = tokens.slice(n + 1, i);
  if (between.some((t) => RECEIPT.has(t.lemma) || RECEIPT.has(t.norm))) return false;
  const before = tokens[n - 1];
  const after = tokens[n + 1];
  if (before && MODALS.has(before.norm) && after && (after.norm === "you" || after.norm === "we")) return false;
  if (tokens[n]!.norm === "no" && after && PRONOUNS.has(after.norm)) return false;
  return true;
}
