/**
 * Order numbers as the shop writes them ("A-1002"), read from what customers type: "A1002", "a-1002", "#A-1002",
 * "a 1002", "A – 1002", "A-10O2" (a letter O among the digits). A number without its letters ("order 1002") is
 * never completed with a guessed prefix: the model asks which order instead.
 *
 * This stays a single pattern over the raw text (not over tokens): the tokeniser splits "a 1002" and "#A-1002"
 * into pieces whose boundaries differ from one spelling to the next, while the shape of an order number is fixed.
 */

const EMAIL_RE = /[A-Z0-9._%+-]+@[A-Z0-9.-]+\.[A-Z]{2,}/gi;

// prefix, then: a separator of dashes or underscores (spaces allowed around it), nothing, or — only after a lone
// letter — a space ("a 1002"); then 3–6 digits, where a mistyped letter O counts as a zero once a digit came first.
const ORDER_RE = /(?<![\w@.$-])#?\s?([A-Z]{1,3})(\s*[-‐‑–—_]+\s*|(?<=\b[A-Z])\s|)(\d[\dO]{2,5})(?![\w$-]|[.,]\d)/gi;

// "a 100 dollars", "a 2003 model": a lone letter and a spaced number are only an order number when nothing says
// the number is something else.
const NOT_AN_ORDER_AFTER = /^\s*(?:dollars?|bucks?|usd|\$|cents?|percent|%|times|days?|years?|months?|miles?|items?|pieces?|model)\b/i;

export interface OrderNumberMatch {
  /** Canonical form: "A-1002". */
  number: string;
  start: number;
  end: number;
}

/** Every order number in the text with its place, canonical, in order of appearance (emails masked first). */
export function orderNumberMatches(text: string): OrderNumberMatch[] {
  // Offsets are into the text as given: callers that want full-width forms read pass it through NFKC first.
  // Emails go first: "sam123@example.com" is not order SAM-123. Masking keeps offsets.
  const masked = text.replace(EMAIL_RE, (m) => " ".repeat(m.length));
  const out: OrderNumberMatch[] = [];
  for (const m of masked.matchAll(ORDER_RE)) {
    const [whole, prefix, separator, digits] = m as unknown as [string, string, string, string];
    const end = m.index + whole.length;
    if (separator.trim() === "" && separator.length > 0) {
      // Spaced form ("a 1002"): four digits or more, and not followed by a unit or a currency.
      if (digits.length < 4 || NOT_AN_ORDER_AFTER.test(masked.slice(end))) continue;
    }
    // Keep the leading space of "# A-1" outside the match.
    const start = m.index + (whole.length - whole.trimStart().length);
    out.push({ number: `${prefix.toUpperCase()}-${digits.toUpperCase().replace(/O/g, "0")}`, start, end });
  }
  return out;
}

/** The distinct order numbers a text names, canonical ("A-1002"), in order of first appearance. */
export function findOrderNumbers(text: string): string[] {
  return [...new Set(orderNumberMatches(text.normalize("NFKC")).map((m) => m.number))];
}

/** The text with every order number written canonically, so the tokeniser sees one word per order number. */
export function canonicalOrderNumbers(text: string): string {
  let out = "";
  let at = 0;
  for (const m of orderNumberMatches(text)) {
    out += `${text.slice(at, m.start)}${m.number}`;
    at = m.end;
  }
  return out + text.slice(at);
}

/** A token that is a canonical order number. */
export const isCanonicalOrderNumber = (word: string) => /^[A-Z]{1,3}-\d{3,6}$/i.test(word);
