import { type Clause, splitIntoClauses } from "./clauses";
import type { IntentKind } from "./intent-table";
import { analyse, textOf, type Token } from "./tokens";

/**
 * What one customer message asks for: its concerns in order, each with its order number and amount. The reading
 * is the intent table's (`intent-table.ts`); this file only applies the rules that span clauses:
 *   - a clause that names no order takes the order of the nearest clause before it that does (or the first after
 *     it); "them", "both", "all" take every order named before it;
 *   - a clause that only says what went wrong is the reason for the requests around it; when no request covers
 *     its order, it asks about that order (a status question);
 *   - a person or a list of orders is about the conversation, not an order;
 *   - a cancellation already gives the money back: a refund asked for the same order in the same breath is part of it;
 *   - a request that needs an exception ("bought three years ago … can you refund it?") goes to a person whole: the
 *     policy question takes with it a refund, replacement or cancellation of its order that names no order itself;
 *   - a weak question next to what went wrong ("vanished on the way") is the reason for a request about its order;
 *   - the same request twice (same kind, same order) is one concern;
 *   - a request is `inTransit` when a clause about its order (or naming none) says the trouble happened on the way.
 */

export interface UnderstoodConcern {
  kind: IntentKind;
  order?: string;
  amountCents?: number;
  /** The clause, as the customer wrote it (spelling corrected). */
  text: string;
  /** A status question read from a complaint alone ("A-1003 never came"), not asked outright. */
  complaint?: true;
  /** The message says the trouble happened on the way (lost, late, crushed in the post): a delivery problem. */
  inTransit?: true;
}

export interface Understanding {
  concerns: UnderstoodConcern[];
  clauses: Clause[];
}

const PLURAL = new Set(["them", "both", "all", "each", "those", "they", "these"]);
const PRICE_WORDS = new Set(["pay", "paid", "cost", "spend", "spent", "charge", "charged", "total", "price", "worth"]);
const WITHOUT_ORDER: ReadonlySet<IntentKind> = new Set(["human", "list_orders"]);
const EXCEPTION_TAKES: ReadonlySet<IntentKind> = new Set(["refund", "replace", "cancel"]);
const unique = <T>(xs: T[]) => [...new Set(xs)];

const ordersIn = (tokens: Token[]) => unique(tokens.flatMap((t) => (t.order ? [t.order] : [])));

/** The amount a clause asks for: one inside a matched cue ("$820 back"), else the first that is not a price paid. */
function amountIn(clause: Clause, amounts: number[]): number | undefined {
  const inClause = unique(clause.tokens.flatMap((t) => (t.amount === undefined ? [] : [t.amount])));
  if (!inClause.length) return undefined;
  for (const m of clause.reading.matches) {
    const hit = clause.tokens.slice(m.start, m.end).find((t) => t.amount !== undefined);
    if (hit && (m.kind === "refund" || m.kind === "policy_gap")) return amounts[hit.amount!];
  }
  const notAPrice = inClause.filter((a) => {
    const at = clause.tokens.findIndex((t) => t.amount === a);
    return !clause.tokens.slice(Math.max(0, at - 3), at).some((t) => PRICE_WORDS.has(t.lemma) || PRICE_WORDS.has(t.norm));
  });
  return amounts[(notAPrice[0] ?? inClause[0])!];
}

const cache = new Map<string, Understanding>();

/** The concerns of one message (cached: the model re-reads the whole conversation on every request). */
export function understand(text: string): Understanding {
  const hit = cache.get(text);
  if (hit) return hit;
  if (cache.size > 1000) cache.clear();
  const result = read(text);
  cache.set(text, result);
  return result;
}

function read(text: string): Understanding {
  const { tokens, amounts } = analyse(text);
  const clauses = splitIntoClauses(tokens);
  const orders = clauses.map((c) => ordersIn(c.tokens));

  const ordersFor = (i: number): string[] => {
    if (orders[i]!.length) return orders[i]!;
    const plural = clauses[i]!.tokens.some((t) => PLURAL.has(t.norm));
    if (plural && orders.slice(0, i).flat().length) return unique(orders.slice(0, i).flat());
    for (let j = i - 1; j >= 0; j--) if (orders[j]!.length) return [orders[j]!.at(-1)!];
    for (let j = i + 1; j < clauses.length; j++) if (orders[j]!.length) return plural ? orders[j]! : [orders[j]![0]!];
    return [];
  };

  /** `at`: the clause; `inherited`: the clause names no order itself. */
  type Placed = UnderstoodConcern & { at: number; inherited?: boolean };
  const requests: Placed[] = [];
  const problems: Array<{ at: number; orders: string[]; text: string }> = [];
  clauses.forEach((clause, i) => {
    const { kind, problem } = clause.reading;
    const words = textOf(clause.tokens);
    if (!kind) {
      if (problem) problems.push({ at: i, orders: ordersFor(i), text: words });
      return;
    }
    const amountCents = kind === "refund" || kind === "policy_gap" ? amountIn(clause, amounts) : undefined;
    const targets = WITHOUT_ORDER.has(kind) ? [undefined] : ordersFor(i).length ? ordersFor(i) : [undefined];
    const inherited = orders[i]!.length === 0;
    for (const order of targets)
      requests.push({ kind, at: i, inherited, text: words, ...(order ? { order } : {}), ...(amountCents ? { amountCents } : {}) });
  });

  // "A-1003 vanished somewhere on the way. Reship it": a complaint that only looks like a question (a weak status
  // cue next to what went wrong) is the reason for the request about the same order, not a question of its own.
  for (let i = requests.length - 1; i >= 0; i--) {
    const r = requests[i]!;
    const reading = clauses[r.at]!.reading;
    if (r.kind !== "status" || !reading.problem || (reading.scores.status ?? 0) >= 2) continue;
    if (requests.some((o) => o.kind !== "status" && !WITHOUT_ORDER.has(o.kind) && o.order === r.order)) requests.splice(i, 1);
  }

  // An amount stated outside any request ("I paid $42.50 for A-1001. Refund it please") is the one asked for when it
  // is the only one.
  const loose = clauses.flatMap((c) =>
    c.reading.kind ? [] : unique(c.tokens.flatMap((t) => (t.amount === undefined ? [] : [amounts[t.amount]!]))),
  );
  if (loose.length === 1) for (const r of requests) if (r.kind === "refund" && r.amountCents === undefined) r.amountCents = loose[0];

  const asksForPerson = requests.some((r) => r.kind === "human");
  const statusQuestions: Placed[] = [];
  for (const p of problems) {
    if (asksForPerson) break;
    const covered = (order?: string) => requests.some((r) => !WITHOUT_ORDER.has(r.kind) && (order === undefined || r.order === order));
    const targets = p.orders.length ? p.orders : [undefined];
    for (const order of targets)
      if (!covered(order)) statusQuestions.push({ kind: "status", at: p.at, text: p.text, complaint: true, ...(order ? { order } : {}) });
  }

  // On the way: the orders of the clauses that say so (undefined: a clause that names none speaks for every order).
  const transit = new Set(clauses.flatMap((c, i) => (c.reading.inTransit ? (ordersFor(i).length ? ordersFor(i) : [undefined]) : [])));
  for (const r of [...requests, ...statusQuestions])
    if (clauses[r.at]!.reading.inTransit || transit.has(undefined) || (r.order && transit.has(r.order))) r.inTransit = true;

  const cancelled = new Set(requests.filter((r) => r.kind === "cancel" && r.order).map((r) => r.order));
  const exceptions = new Set(requests.filter((r) => r.kind === "policy_gap").map((r) => r.order));
  const all = [...requests, ...statusQuestions]
    .filter((r) => !(r.kind === "refund" && r.order && cancelled.has(r.order)))
    .filter((r) => !(EXCEPTION_TAKES.has(r.kind) && r.inherited && exceptions.has(r.order)))
    .sort((a, b) => a.at - b.at);
  const concerns: UnderstoodConcern[] = [];
  for (const { at: _at, inherited: _inherited, ...c } of all) {
    const same = concerns.find((d) => d.kind === c.kind && d.order === c.order);
    if (!same) concerns.push(c);
    else if (same.amountCents === undefined && c.amountCents !== undefined) same.amountCents = c.amountCents;
  }
  return { concerns, clauses };
}
