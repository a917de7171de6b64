/**
 * What a customer's free text asks for, read the way people actually write to a shop's support chat.
 * Pure text functions: no knowledge of any shop's orders, customers or amounts.
 */

import { readClause } from "./language/cues";
import type { IntentKind } from "./language/intent-table";
import { analyse, textOf } from "./language/tokens";
import { understand } from "./language/understand";

export type ConcernKind = IntentKind;

export interface Address {
  line1: string;
  line2?: string;
  city: string;
  postalCode: string;
  country: string;
}

/** One thing the customer wants done or answered. */
export interface ParsedConcern {
  kind: ConcernKind;
  order?: string;
  amountCents?: number;
  reason: string;
  /** For address changes: the parsed address, or undefined when it is missing or incomplete. */
  address?: Address;
  /** The customer's words for this concern (for handoff summaries). */
  text: string;
  /** A status question read from a complaint alone ("A-1003 never came"), not asked outright. */
  complaint?: true;
  /** The trouble happened on the way (lost, late, crushed in the post): the delivery specialist's case. */
  inTransit?: true;
}

const EMAIL_RE = /[A-Z0-9._%+-]+@[A-Z0-9.-]+\.[A-Z]{2,}/gi;

/** Order numbers as the shop writes them ("A-1002"), normalised from "a1002", "A 1002", "#A-1002". */
export { findOrderNumbers } from "./language/order-numbers";

export function findEmails(text: string): string[] {
  return [...new Set([...text.matchAll(EMAIL_RE)].map((m) => m[0].toLowerCase().replace(/\.$/, "")))];
}

// Words that follow "I'm" without being a name ("I'm Very upset", "I'm Still waiting").
const NOT_A_NAME = new Set(
  "not very so just still really looking trying having getting writing contacting here back sorry afraid interested wondering unhappy happy calling the a an also from with in on at".split(
    " ",
  ),
);

/** A full name the customer introduces themselves with ("I'm Alex Kim", "my name is Dana Reyes"). */
export function findName(text: string): string | undefined {
  const re =
    /\b(?:[Ii]'?m|[Ii] am|[Mm]y name is|[Mm]y name's|[Tt]his is|[Ii]t's|[Nn]ame:)\s+([A-Z][a-zA-Z'’-]+(?:\s+[A-Z][a-zA-Z'’-]+){1,2})/g;
  for (const m of text.matchAll(re)) {
    const name = m[1]!.trim();
    if (!NOT_A_NAME.has(name.split(/\s+/)[0]!.toLowerCase())) return name;
  }
  return undefined;
}

/** The first explicit amount ("$150", "$42.50", "150 dollars", "fifty bucks") in cents. */
export function findAmountCents(text: string): number | undefined {
  return analyse(text).amounts[0];
}

const REASONS =
  /\b(arrived (?:damaged|broken|late)|damaged|broken|defective|cracked|faulty|smashed|torn|ripped|stained|shattered|wrong (?:item|size|colou?r|product|order)|never (?:arrived|came|showed up)|lost in transit|lost|missing(?: items?| parts?)?|doesn'?t fit|too (?:small|big|large)|changed my mind|no longer need(?:ed)?|don'?t need it|not as described|ordered (?:it )?by mistake|duplicate order|too late)\b/i;

/** Why, in the customer's words: a recognised phrase, else their sentence. */
export function findReason(clause: string, wholeText: string): string | undefined {
  return (clause.match(REASONS) ?? wholeText.match(REASONS))?.[1]?.toLowerCase();
}

/** The clause without leading filler ("Also, please …") or trailing punctuation, at most 200 characters. */
function inOwnWords(clause: string): string {
  const words = clause.replace(/^(?:(?:and|also|plus|so|then|oh|ok(?:ay)?|please|hi|hello|hey)\b[\s,:]*)+/i, "").replace(/[\s.!?]+$/, "");
  return (words || clause).slice(0, 200);
}

/** Parses "12 New Street, Springfield, 12345, US" (also "…, Springfield 12345, US"); undefined if incomplete. */
export function parseAddress(text: string): Address | undefined {
  const m =
    text.match(/address(?:\s+(?:of|for|on)\s+(?:my\s+)?(?:order\s+)?#?[A-Z]{1,3}-?\d{3,6})?\s*(?:to|:|is now|should be|is)\s+(.+)$/is) ??
    text.match(
      /\b(?:ship|deliver|send)\s+(?:it|them|my order|the order|order\s+#?[A-Z]{1,3}-?\d{3,6}|#?[A-Z]{1,3}-?\d{3,6})?\s*to\s+(.+)$/is,
    );
  if (!m) return undefined;
  const raw = m[1]!
    .replace(/\b(please|thanks|thank you|thx)\b[.!]*/gi, "")
    .replace(/[\s.!]+$/, "")
    .trim();
  const parts = raw
    .split(/\s*[,\n]\s*/)
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length < 2) return undefined;
  let country: string | undefined;
  if (!/\d/.test(parts.at(-1)!) && parts.length >= 3) country = parts.pop();
  let postalCode: string | undefined;
  let city: string | undefined;
  const last = parts.pop()!;
  if (/^[A-Z0-9][A-Z0-9 -]{1,9}$/i.test(last) && /\d/.test(last)) {
    postalCode = last;
    city = parts.pop();
  } else {
    const cm = last.match(/^(.+?)\s+([A-Z]{0,2}\d[A-Z0-9]{2,8}(?:[ -][A-Z0-9]{2,4})?)$/i);
    if (cm) {
      city = cm[1];
      postalCode = cm[2];
    }
  }
  const line1 = parts.shift();
  if (!line1 || !city || !postalCode || !country) return undefined;
  return { line1, ...(parts.length ? { line2: parts.join(", ") } : {}), city, postalCode, country };
}

/** The kind of request a clause makes, if any (by the intent table, `language/intent-table.ts`). */
export function kindOf(clause: string): ConcernKind | undefined {
  return readClause(analyse(clause).tokens).kind;
}

/** Splits a message into clauses that can each carry their own request ("Where is A-1003? Also refund A-1001"). */
export function splitClauses(text: string): string[] {
  return understand(text).clauses.map((c) => textOf(c.tokens));
}

/**
 * The concerns one customer message raises, in order (see `language/understand.ts` for how clauses, orders and
 * amounts go together), each with the reason in the customer's words and, for an address change, the address.
 */
export function parseConcerns(text: string): ParsedConcern[] {
  return understand(text).concerns.map((c) => {
    const address = c.kind === "address" ? parseAddress(text) : undefined;
    return { ...c, reason: findReason(c.text, text) ?? inOwnWords(c.text), ...(address ? { address } : {}) };
  });
}

const GREETINGS = new Set(["hi", "hello", "hey", "hiya", "howdy", "greetings", "morning", "evening", "afternoon", "good"]);

export function isGreeting(text: string): boolean {
  const first = analyse(text).tokens.find((t) => t.type === "word");
  return (
    first !== undefined &&
    GREETINGS.has(first.norm) &&
    (first.norm !== "good" || /^\s*good (?:morning|afternoon|evening|day)\b/i.test(text))
  );
}

export function isThanks(text: string): boolean {
  return (
    /\b(thanks|thank you|thx|cheers|appreciate it)\b/i.test(text) || /^\s*(ok(?:ay)?|great|perfect|cool|got it|bye)\b[.! ]*$/i.test(text)
  );
}
