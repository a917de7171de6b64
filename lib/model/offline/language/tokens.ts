import winkNLP, { type ItemSentence, type ItemToken, type WinkMethods } from "wink-nlp";
import model from "wink-eng-lite-web-model";
import { findAmounts } from "./amounts";
import { canonicalOrderNumbers, isCanonicalOrderNumber } from "./order-numbers";
import { correctWord } from "./spelling";
import type { Token } from "./token";

export type { Token } from "./token";

/**
 * Customer text as tokens the intent table can read. The tokeniser is wink-nlp with its shipped English model
 * (`wink-eng-lite-web-model`, pure JavaScript, no download at install or run time): it splits sentences, expands
 * contractions ("don't" → do + not, "pls" → please), lemmatises ("arrived" → arrive, "paid" → pay), tags parts of
 * speech, flags the words a negation covers, and knows which words are English — the ones spelling leaves alone.
 * It is deterministic: the same text always gives the same tokens.
 */
export interface AnalysedText {
  tokens: Token[];
  /** Amounts of money the text states, in cents, in order; tokens point into this list. */
  amounts: number[];
}

let wink: WinkMethods | undefined;
// The model takes a few hundred milliseconds to load: only when the offline model first reads text.
const nlp = () => (wink ??= winkNLP(model));

function knownWord(word: string): boolean {
  return !nlp().readDoc(word).isOOV(word);
}

const cache = new Map<string, AnalysedText>();

/** Tokens of a customer's text, with spelling corrected, order numbers canonical and amounts marked. Cached. */
export function analyse(text: string): AnalysedText {
  const hit = cache.get(text);
  if (hit) return hit;
  // NFKC first: "ｒｅｆｕｎｄ Ａ－１００１" from a full-width keyboard is "refund A-1001".
  const corrected = correctSpelling(canonicalOrderNumbers(text.normalize("NFKC")));
  const doc = nlp().readDoc(corrected);
  const its = nlp().its;
  const tokens: Token[] = [];
  doc.sentences().each((sentence: ItemSentence, s: number) => {
    sentence.tokens().each((t: ItemToken) => {
      const value = String(t.out(its.value));
      tokens.push({
        text: value,
        space: String(t.out(its.precedingSpaces)),
        norm: String(t.out(its.normal)),
        // wink's typings declare the lemma helper with an extra argument that `out` supplies itself.
        lemma: String(t.out(its.lemma as unknown as typeof its.normal)),
        pos: String(t.out(its.pos)),
        type: String(t.out(its.type)),
        negated: t.out(its.negationFlag) === true,
        sentence: s,
        ...(isCanonicalOrderNumber(value) ? { order: value.toUpperCase() } : {}),
      });
    });
  });
  const amounts = findAmounts(tokens);
  const result = { tokens, amounts };
  if (cache.size > 1000) cache.clear();
  cache.set(text, result);
  return result;
}

/** The text with each misspelt word replaced by the domain word it most likely was ("cn u refnd" → "can you refund"). */
function correctSpelling(text: string): string {
  const doc = nlp().readDoc(text);
  const its = nlp().its;
  let out = "";
  let changed = false;
  let sentenceStart = true;
  doc.tokens().each((t: ItemToken) => {
    const value = String(t.out(its.value));
    let word = value;
    // A capitalised word inside a sentence is a name ("Denver", "Okafor"), not a typo; shouting ("REFND") is not.
    const name = !sentenceStart && /^[A-Z][a-z]/.test(value);
    if (t.out(its.type) === "word" && /^[A-Za-z]+$/.test(value) && !name && !isCanonicalOrderNumber(value)) {
      const fixed = correctWord(value, knownWord);
      if (fixed !== value.toLowerCase()) {
        word = fixed;
        changed = true;
      }
    }
    out += String(t.out(its.precedingSpaces)) + word;
    sentenceStart = t.out(its.type) === "tabCRLF" || /^[.!?]+$/.test(value);
  });
  return changed ? out : text;
}

/** The words of tokens `from`..`to` (exclusive) as written, without the leading space. */
export function textOf(tokens: Token[], from = 0, to = tokens.length): string {
  return tokens
    .slice(from, to)
    .map((t, i) => (i === 0 ? "" : t.space) + t.text)
    .join("")
    .trim();
}
