import { closest, distance } from "fastest-levenshtein";
import { NUMBER_WORDS } from "./amounts";
import { INTENT_TABLE } from "./intent-table";

/**
 * Spelling correction against the shop's own vocabulary. Only words the English model does not know are touched
 * ("refnd", "ordr", "adress", "cancle"), and only towards a word of the support domain: a general spell checker would
 * "fix" names, product words and slang into the wrong thing, and the intent table only needs its own words right.
 * `fastest-levenshtein` gives the edit distance; the rules that make it safe are here: same first letter, one edit
 * for short words, two for longer ones (a swapped pair of letters, "cancle", costs two).
 */

/** Chat shorthand the model reads as a word of its own ("u", "ur"); mapped before anything else. */
const SHORTHAND: Record<string, string> = {
  u: "you",
  ur: "your",
  yr: "your",
  r: "are",
  cn: "can",
  cld: "could",
  n: "and",
  im: "i'm",
  ive: "i've",
  wanna: "want",
  gimme: "give",
  gotta: "must",
  pls: "please",
  plz: "please",
  plss: "please",
  pleez: "please",
  thx: "thanks",
  thnx: "thanks",
  tnx: "thanks",
  ty: "thanks",
  tysm: "thanks",
  abt: "about",
  bc: "because",
  cuz: "because",
  coz: "because",
  rn: "now",
  pkg: "package",
  pckg: "package",
  amt: "amount",
  acct: "account",
  addr: "address",
  ord: "order",
  hv: "have",
  hav: "have",
  hvnt: "haven't",
  didnt: "didn't",
  havent: "haven't",
  hasnt: "hasn't",
  isnt: "isn't",
  wasnt: "wasn't",
  doesnt: "doesn't",
  wont: "won't",
  cant: "can't",
  dont: "don't",
  ppl: "people",
  sum1: "someone",
  some1: "someone",
  smth: "something",
  sth: "something",
  tho: "though",
  thru: "through",
  hii: "hi",
  hiii: "hi",
  heyy: "hey",
  helo: "hello",
  hallo: "hello",
  yo: "hi",
  wat: "what",
  wut: "what",
  whats: "what's",
  wheres: "where's",
  whr: "where",
  wer: "where",
  wher: "where",
  wen: "when",
  y: "why",
  k: "ok",
  kk: "ok",
  ok: "ok",
  bucs: "bucks",
};

/** Domain words beyond those the intent table spells out (cues are built from lemmas: "arrive", not "arrived"). */
const EXTRA_VOCABULARY =
  "order orders ordered refund refunded refunds replacement replacements replace replaced cancel cancelled canceled cancellation address delivery deliver delivered package parcel shipment shipping shipped money dollars bucks received receive arrived arrive damaged broken please thanks thank where status tracking track person human agent representative supervisor manager someone somebody jacket shoes shirt sweater item items account email number payment charged credit card today tomorrow yesterday waiting still already never again instead wrong would could should really actually because about something anything everything hello reimburse reimbursement replacement compensation exchange".split(
    " ",
  );

function cueWords(): string[] {
  const words = new Set<string>();
  for (const row of INTENT_TABLE)
    for (const cue of Object.keys(row.cues))
      for (const part of cue.split(/\s+/)) for (const w of part.split("|")) if (/^[a-z]{4,}$/.test(w)) words.add(w);
  return [...words];
}

let vocabulary: string[] | undefined;
/** The words spelling is corrected towards: every cue word of the intent table, the domain's nouns, number words. */
export function domainVocabulary(): string[] {
  vocabulary ??= [...new Set([...cueWords(), ...EXTRA_VOCABULARY, ...NUMBER_WORDS])].sort();
  return vocabulary;
}

/** "pleeease" → "please", "hiii" → "hi": letters held down are a tone, not a spelling. */
const squeeze = (w: string, keep: 1 | 2) => (keep === 2 ? w.replace(/([a-z])\1{2,}/g, "$1$1") : w.replace(/([a-z])\1+/g, "$1"));

/**
 * The word the customer meant, lowercase, or the word itself. `known(word)` says whether the language model knows
 * a spelling; known words are never changed (except shorthand, which the model may know as something else: "u").
 */
export function correctWord(word: string, known: (w: string) => boolean): string {
  const w = word.toLowerCase();
  const short = SHORTHAND[w];
  if (short) return short;
  if (!/^[a-z]+$/.test(w) || known(w)) return w;
  for (const candidate of [squeeze(w, 2), squeeze(w, 1)]) {
    if (candidate !== w && (known(candidate) || domainVocabulary().includes(candidate))) return SHORTHAND[candidate] ?? candidate;
  }
  if (w.length < 4) return w;
  const pool = domainVocabulary().filter((v) => v[0] === w[0] && Math.abs(v.length - w.length) <= 2);
  if (!pool.length) return w;
  const best = distance(w, closest(w, pool));
  if (best > (w.length <= 5 ? 1 : 2)) return w;
  // Ties go to the commonest slips: two letters swapped ("cancle": cancel, not canceled), then a letter dropped
  // ("mony": money, not many).
  const ties = pool.filter((v) => distance(w, v) === best);
  return ties.find((v) => isSwap(w, v)) ?? ties.find((v) => isSubsequence(w, v)) ?? ties[0]!;
}

function isSwap(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  const diff = [...a].flatMap((ch, i) => (ch === b[i] ? [] : [i]));
  return diff.length === 2 && diff[1] === diff[0]! + 1 && a[diff[0]!] === b[diff[1]!] && a[diff[1]!] === b[diff[0]!];
}

function isSubsequence(short: string, long: string): boolean {
  let i = 0;
  for (const ch of long) if (ch === short[i]) i++;
  return i === short.length;
}
