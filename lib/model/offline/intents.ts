/**
 * What a customer's free text asks for, read the way people actually write to a shop's support chat.
 * Pure text functions: no knowledge of any shop's orders, customers or amounts.
 */

export type ConcernKind = "human" | "policy_gap" | "cancel" | "address" | "replace" | "refund" | "status" | "list_orders";

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
}

const ORDER_RE = /\b([A-Z]{1,3})[- ]?(\d{3,6})\b/g;
const EMAIL_RE = /[A-Z0-9._%+-]+@[A-Z0-9.-]+\.[A-Z]{2,}/gi;

/** Order numbers as the shop writes them ("A-1002"), normalised from "a1002", "A 1002", "#A-1002". */
export function findOrderNumbers(text: string): string[] {
  const out: string[] = [];
  // Emails go first: "sam123@example.com" is not order SAM-123.
  for (const m of text.replace(EMAIL_RE, " ").toUpperCase().matchAll(ORDER_RE)) {
    const n = `${m[1]}-${m[2]}`;
    if (!out.includes(n)) out.push(n);
  }
  return out;
}

export function findEmails(text: string): string[] {
  return [...new Set([...text.matchAll(EMAIL_RE)].map((m) => m[0].toLowerCase().replace(/\.$/, "")))];
}

// Words that follow "I'm" without being a name ("I'm Very upset", "I'm Still waiting").
const NOT_A_NAME = new Set(
  "not very so just still really looking trying having getting writing contacting here back sorry afraid interested wondering unhappy happy calling the a an also from with in on at".split(" "),
);

/** A full name the customer introduces themselves with ("I'm Alex Kim", "my name is Dana Reyes"). */
export function findName(text: string): string | undefined {
  const re = /\b(?:[Ii]'?m|[Ii] am|[Mm]y name is|[Mm]y name's|[Tt]his is|[Ii]t's|[Nn]ame:)\s+([A-Z][a-zA-Z'’-]+(?:\s+[A-Z][a-zA-Z'’-]+){1,2})/g;
  for (const m of text.matchAll(re)) {
    const name = m[1]!.trim();
    if (!NOT_A_NAME.has(name.split(/\s+/)[0]!.toLowerCase())) return name;
  }
  return undefined;
}

/** An explicit amount ("$150", "$42.50", "150 dollars") in cents. */
export function findAmountCents(text: string): number | undefined {
  const m = text.match(/\$\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?/) ?? text.match(/\b(\d+)(?:\.(\d{1,2}))?\s*(?:dollars|usd|bucks)\b/i);
  if (!m) return undefined;
  const dollars = Number(m[1]!.replace(/,/g, ""));
  const cents = m[2] ? Number(m[2].padEnd(2, "0")) : 0;
  const total = dollars * 100 + cents;
  return total > 0 ? total : undefined;
}

const REASONS =
  /\b(arrived (?:damaged|broken|late)|damaged|broken|defective|cracked|faulty|smashed|wrong (?:item|size|colou?r|product|order)|never (?:arrived|came|showed up)|lost in transit|lost|missing(?: items?| parts?)?|doesn'?t fit|too (?:small|big|large)|changed my mind|no longer need(?:ed)?|don'?t need it|not as described|ordered (?:it )?by mistake|duplicate order|too late)\b/i;

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
    text.match(/\b(?:ship|deliver|send)\s+(?:it|them|my order|the order|order\s+#?[A-Z]{1,3}-?\d{3,6}|#?[A-Z]{1,3}-?\d{3,6})?\s*to\s+(.+)$/is);
  if (!m) return undefined;
  const raw = m[1]!
    .replace(/\b(please|thanks|thank you|thx)\b[.!]*/gi, "")
    .replace(/[\s.!]+$/, "")
    .trim();
  const parts = raw.split(/\s*[,\n]\s*/).map((p) => p.trim()).filter(Boolean);
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

// Checked in this order: the first kind whose pattern matches a clause wins.
const KIND_PATTERNS: Array<[ConcernKind, RegExp]> = [
  ["human", /\b(human|real person|(?:a|another|actual|live) (?:person|agent|human)|agent,? please|talk to (?:someone|somebody|a person|an agent|a manager|a human|support staff)|speak (?:to|with) (?:someone|somebody|a person|an agent|a manager|a human)|representative|operator|supervisor|manager|someone real)\b/i],
  ["policy_gap", /(price[- ]?match|compensat|for my (?:time|trouble|inconvenience)|pay (?:me )?for (?:the )?damage|damage to my|\b(?:two|2|three|3|several|many) years ago|\blast year\b|refund (?:my |the )?shipping|shipping (?:cost|fee|charge)s? (?:back|refund)|\bexception\b|store credit|gift card|voucher|coupon|discount|goodwill|legal action|lawyer|\bsue\b)/i],
  ["cancel", /\bcancel/i],
  ["address", /\b(?:(?:change|update|correct|fix|edit)\s+(?:the\s+|my\s+)?(?:shipping\s+|delivery\s+)?address|new (?:shipping |delivery )?address|address (?:change|update)|wrong address|(?:ship|deliver|send) (?:it |them |the order |my order )?to (?:a )?(?:different|new|another) address)/i],
  ["replace", /\b(replac|exchange|send (?:me )?(?:a )?(?:new|another) one|resend|re-send|send (?:it )?again)/i],
  ["refund", /\b(refund|money back|reimburse|charge ?back|return (?:it|this|them|the order|my order))/i],
  ["status", /\b(where(?:'s| is| are)?|status|track(?:ing)?|when (?:will|is|does|do|can)|eta|shipped|not (?:arrived|received|here) yet|has(?:n'?t| not) (?:arrived|come|shipped)|did(?:n'?t| not) (?:arrive|get|receive)|never (?:arrived|came|got)|still waiting|delayed|update on)\b/i],
  ["list_orders", /\b((?:my|all(?: of)? my) orders|(?:what|which) orders|orders do i have|order history|what (?:did|have) i (?:order|buy|bought))\b/i],
];

/** The kind of request a clause makes, if any. */
export function kindOf(clause: string): ConcernKind | undefined {
  return KIND_PATTERNS.find(([, re]) => re.test(clause))?.[0];
}

/** Splits a message into clauses that can each carry their own request ("Where is A-1003? Also refund A-1001"). */
export function splitClauses(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|;|\n+|,?\s+(?:and\s+)?also\b[,:]?|,?\s+and\s+(?=(?:please\s+)?(?:where|refund|cancel|replace|change|update|send|track|can|could|i)\b)/i)
    .map((c) => c.trim())
    .filter(Boolean);
}

/**
 * The concerns one customer message raises, in order. A clause that names no order takes the nearest
 * order named earlier in the same message (or the first named after it). Identical concerns collapse.
 */
export function parseConcerns(text: string): ParsedConcern[] {
  const clauses = splitClauses(text);
  const ordersPerClause = clauses.map(findOrderNumbers);
  const out: ParsedConcern[] = [];
  clauses.forEach((clause, i) => {
    const kind = kindOf(clause);
    if (!kind) return;
    let orders = ordersPerClause[i]!;
    if (!orders.length) {
      const before = ordersPerClause.slice(0, i).flat().at(-1);
      const after = ordersPerClause.slice(i + 1).flat()[0];
      const inherited = before ?? after;
      orders = inherited ? [inherited] : [];
    }
    const amountCents = kind === "refund" ? findAmountCents(clause) : undefined;
    const reason = findReason(clause, text) ?? inOwnWords(clause);
    const address = kind === "address" ? parseAddress(text) : undefined;
    // Kinds about the whole conversation carry no order; others get one concern per order named.
    const perOrder = kind === "human" || kind === "list_orders" ? [undefined] : orders.length ? orders : [undefined];
    for (const order of perOrder) {
      const concern: ParsedConcern = { kind, reason, text: clause, ...(order ? { order } : {}), ...(amountCents ? { amountCents } : {}), ...(address ? { address } : {}) };
      if (!out.some((c) => c.kind === concern.kind && c.order === concern.order)) out.push(concern);
    }
  });
  return out;
}

export function isGreeting(text: string): boolean {
  return /^\s*(hi|hello|hey|hiya|good (?:morning|afternoon|evening)|greetings)\b/i.test(text);
}

export function isThanks(text: string): boolean {
  return /\b(thanks|thank you|thx|cheers|appreciate it)\b/i.test(text) || /^\s*(ok(?:ay)?|great|perfect|cool|got it|bye)\b[.! ]*$/i.test(text);
}
