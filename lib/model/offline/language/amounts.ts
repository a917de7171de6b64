import type { Token } from "./token";

/**
 * Amounts of money in customer text, in cents: "$42.5", "$ 820", "820 dollars", "USD 30", "20$", "fifty bucks",
 * "eight hundred and twenty dollars", "a hundred bucks", "$42 and 50 cents", a bare "42.50".
 * A bare whole number is not money ("2 shirts", "refund 3 items"): a currency word or sign, or cents, says so.
 * Number words are a closed set, so they are read with a small table over the tokeniser's words rather than with a
 * second NLP library (wink marks "eight hundred and twenty dollars" as MONEY but does not give its value).
 */

const UNITS: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fourty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
};
const SCALES: Record<string, number> = { hundred: 100, thousand: 1000 };

/** Number words, for spelling ("fourty", "twnety" are amounts, not "faulty"). */
export const NUMBER_WORDS = [...Object.keys(UNITS), ...Object.keys(SCALES)];

const isCurrencySign = (t: Token | undefined) => t?.text === "$";
/** Words that make the number before them dollars ("dollars", "bucks", "usd", "$" after: "20$"). */
const dollarsAfter = (t: Token | undefined) =>
  !!t && (t.lemma === "dollar" || t.lemma === "buck" || t.norm === "bucks" || t.norm === "usd" || t.text === "$");
const isCents = (t: Token | undefined) => !!t && (t.norm === "cents" || t.norm === "cent" || t.lemma === "cent");
const isNumberWord = (t: Token | undefined) => !!t && (t.norm in UNITS || t.norm in SCALES);

interface NumberPhrase {
  value: number;
  /** Index after the phrase. */
  end: number;
}

/** A number at `i`: digits ("1,000", "42.5", "2 hundred") or words ("eight hundred and twenty", "forty-two", "a hundred"). */
function readNumber(tokens: Token[], i: number): NumberPhrase | undefined {
  const t = tokens[i];
  if (!t) return undefined;
  if (t.type === "number" && /^\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^\d+(?:\.\d+)?$/.test(t.text)) {
    let value = Number(t.text.replace(/,/g, ""));
    let end = i + 1;
    const scale = SCALES[tokens[end]?.norm ?? ""];
    if (scale && Number.isInteger(value)) {
      value *= scale;
      end++;
    }
    return { value, end };
  }
  // "a hundred", "a thousand"
  let j = i;
  if (t.norm === "a" && tokens[i + 1]?.norm && tokens[i + 1]!.norm in SCALES) j = i + 1;
  if (!isNumberWord(tokens[j])) return undefined;
  let total = 0;
  let current = 0;
  let end = j;
  let seen = false;
  while (end < tokens.length) {
    const w = tokens[end]!;
    if (w.norm in UNITS) {
      current += UNITS[w.norm]!;
      seen = true;
      end++;
    } else if (w.norm in SCALES) {
      const scale = SCALES[w.norm]!;
      if (scale === 100) current = (current || 1) * 100;
      else {
        total += (current || 1) * scale;
        current = 0;
      }
      seen = true;
      end++;
    } else if ((w.norm === "and" || w.text === "-") && isNumberWord(tokens[end + 1]) && seen) end++;
    else break;
  }
  return seen ? { value: total + current, end } : undefined;
}

/** Cents from a number phrase value: 42.5 → 4250. */
const toCents = (dollars: number) => Math.round(dollars * 100);

/**
 * Finds the amounts in the tokens, marks each token of an amount with its index, and returns the amounts in cents.
 */
export function findAmounts(tokens: Token[]): number[] {
  const amounts: number[] = [];
  const mark = (from: number, to: number, cents: number) => {
    if (cents <= 0) return;
    for (let k = from; k < to; k++) tokens[k]!.amount = amounts.length;
    amounts.push(cents);
  };
  let i = 0;
  while (i < tokens.length) {
    const t = tokens[i]!;
    // "$820", "$ 42.50", "USD 30"
    if (isCurrencySign(t) || t.norm === "usd") {
      const n = readNumber(tokens, i + 1);
      if (n) {
        const cents = readCents(tokens, n.end);
        mark(i, cents?.end ?? n.end, toCents(n.value) + (cents?.value ?? 0));
        i = cents?.end ?? n.end;
        continue;
      }
    }
    const n = readNumber(tokens, i);
    if (n) {
      const after = tokens[n.end];
      if (dollarsAfter(after)) {
        // "42 dollars and 50 cents"
        const cents = readCents(tokens, n.end + 1);
        mark(i, cents?.end ?? n.end + 1, toCents(n.value) + (cents?.value ?? 0));
        i = cents?.end ?? n.end + 1;
        continue;
      }
      if (after?.norm === "grand") {
        mark(i, n.end + 1, toCents(n.value * 1000));
        i = n.end + 1;
        continue;
      }
      if (isCents(after) && Number.isInteger(n.value)) {
        mark(i, n.end + 1, n.value);
        i = n.end + 1;
        continue;
      }
      // A bare "42.50" is money: nothing else is written with exactly two decimals in a support chat.
      if (t.type === "number" && /^\d+\.\d{2}$/.test(t.text) && n.end === i + 1) {
        mark(i, i + 1, toCents(n.value));
        i++;
        continue;
      }
      i = n.end;
      continue;
    }
    i++;
  }
  return amounts;
}

/** "and 50 cents" / "50 cents" right after dollars. */
function readCents(tokens: Token[], i: number): { value: number; end: number } | undefined {
  const start = tokens[i]?.norm === "and" ? i + 1 : i;
  const n = readNumber(tokens, start);
  if (n && Number.isInteger(n.value) && n.value < 100 && isCents(tokens[n.end])) return { value: n.value, end: n.end + 1 };
  return undefined;
}
