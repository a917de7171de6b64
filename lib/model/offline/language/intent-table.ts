/**
 * THE intent table: what each kind of request sounds like. One row per kind, each cue with a weight.
 *
 * How a clause is read (see `cues.ts`): every cue found in it adds its weight to its kind; the kind with the highest
 * total of at least 1 is what the clause asks for; a tie goes to the row that comes first (so a person beats a
 * policy question, which beats a cancellation, … which beats listing orders). A cue the customer negates ("I don't
 * want a refund") counts for nothing. Negative weights are cues that take a kind back ("thanks for the refund").
 * `problem` is not a request: it is what went wrong ("arrived torn", "never showed up"); a clause with only a problem
 * is the reason for the request next to it, or — when the message asks nothing else — a question about that order.
 * `in_transit` is not a request either: it says the trouble happened on the way (lost, late, never came, crushed in
 * the post). It decides which specialist a case goes to (`SPECIALIST_ROUTES` at the end).
 *
 * Cue syntax, matched against each token's normalised form or its lemma (so "arrive" matches "arrived", "be" matches
 * "is" and "'s", "pay" matches "paid"):
 *   words      in order, one token each             "money back"
 *   a|b        either word                          "talk|speak to"
 *   =word      the word exactly, not its lemma      "=return it" (not "returned it")
 *   …          up to four other tokens              "put … back on … card"
 *   NOT        a negation (not, n't, never, no)     "NOT arrive"
 *   ORDER      an order number ("A-1002")           "where be ORDER"
 *   NUMBER     a number that is not money           "send … to NUMBER" (a house number)
 *   MONEY      an amount ("$820", "fifty bucks")    "MONEY back"
 */

export type IntentKind = "human" | "policy_gap" | "cancel" | "address" | "replace" | "refund" | "status" | "list_orders";
export type TableKind = IntentKind | "problem" | "in_transit";

export interface IntentRow {
  kind: TableKind;
  cues: Record<string, number>;
}

export const INTENT_TABLE: readonly IntentRow[] = [
  {
    kind: "human",
    cues: {
      human: 3,
      "real|live|actual|proper person|human|agent|people": 3,
      "talk|speak|chat|connect|transfer|put … to|with … person|human|someone|somebody|agent|rep|representative|manager|supervisor|boss|staff|employee|team": 3,
      "someone|somebody real": 3,
      "person|human|someone|somebody|agent … talk|speak|chat": 3,
      "someone|somebody from … team|staff|support": 3,
      representative: 3,
      supervisor: 3,
      manager: 3,
      operator: 2,
      agent: 2,
      escalate: 2,
      "NOT … bot|robot|machine": 3,
      "no|stop … bot|robot": 3,
      "call me": 2,
      "phone me": 2,
    },
  },
  {
    kind: "policy_gap",
    cues: {
      "price match": 3,
      "price - match": 3,
      "match … price": 3,
      "cheaper … elsewhere|somewhere": 3,
      compensation: 3,
      compensate: 3,
      "for my time|trouble|inconvenience|hassle": 3,
      "compensate|pay … for … time|trouble|inconvenience|hassle": 3,
      "pay|cover … damage": 3,
      "damage to my": 3,
      "cover … cost|bill|bills|expense|expenses": 3,
      "=pay for … carpet|floor|furniture|table|rug|sofa|couch|wall|car|laptop|phone": 3,
      "two|2|three|3|four|4|several|many|few years ago": 3,
      "last year": 3,
      "refund|reimburse … shipping|postage": 3,
      "shipping|postage|delivery cost|fee|fees|charge|charges": 3,
      exception: 3,
      "store credit": 3,
      "gift card": 3,
      voucher: 3,
      coupon: 3,
      discount: 3,
      "promo code": 3,
      goodwill: 3,
      "legal action": 3,
      lawyer: 3,
      attorney: 3,
      sue: 3,
      "small claims": 3,
      "bank|overdraft fee|fees|charge": 3,
    },
  },
  {
    kind: "cancel",
    cues: {
      cancel: 2,
      "cancellation|cancelation": 2,
      "call off": 2,
      "stop|halt … order|shipment|shipping|delivery|it": 1.5,
      "do NOT send|ship|dispatch|process": 1.5,
      "i|we =cancelled|=canceled": -2,
      "no longer want|need": 1.5,
      "NOT want|need it|this|them|that|order|ORDER anymore|longer": 1.5,
      "withdraw … order": 1.5,
      "undo … order|purchase": 1.5,
      "scrap … order": 1.5,
      "before … ship": 0.5,
    },
  },
  {
    kind: "address",
    cues: {
      "change|update|correct|fix|edit|amend|modify … address": 2,
      "new|different|another|wrong|right|correct|old|updated … address": 2,
      "address … wrong|incorrect|outdated|old|change|typo|mistake": 2,
      "ship|send|deliver|redirect|reroute … to … instead": 1.5,
      "change|update … where … deliver|ship|send|go": 2,
      "typo|mistake|error … address": 2,
      instead: 0.5,
      "redirect|reroute": 1.5,
      "moved|move|relocate": 0.5,
      address: 0.5,
      "ship|send|deliver it|them|order|ORDER … to": 0.5,
      "ship|send|deliver|mail|redirect … to NUMBER": 1,
    },
  },
  {
    kind: "replace",
    cues: {
      replace: 2,
      replacement: 2,
      exchange: 2,
      swap: 1.5,
      trade: 1.5,
      resend: 2,
      reship: 2,
      "re - send|ship": 2,
      "send|ship|mail … again": 1.5,
      "send|ship … mine": 1.5,
      "another|fresh|working|intact|undamaged|replacement one|pair|copy|unit|item|version": 1,
      "new pair|copy|unit|version": 1,
      "send|ship|mail|get|give|want|need|like|love … new|another": 1,
      "different|right|correct|bigger|smaller|larger size|colour|color|one|item|pair": 1,
      "replacement|replace … arrive|come|ship": -1.5,
      "replacement|replace … NOT help|work|do|fix": -2,
    },
  },
  {
    kind: "refund",
    cues: {
      refund: 1,
      reimburse: 1,
      reimbursement: 1,
      chargeback: 1,
      "charge back": 1,
      "money back": 1.5,
      "want|need|give|get|return … my|the|our money|cash": 1,
      "money|cash … return|refund": 1,
      "give|pay|send me back": 1,
      "back … MONEY": 1,
      "my money": 0.5,
      "back on|to|onto … card|account|paypal|visa|mastercard|amex|bank": 1.5,
      "pay|put|give … back": 1,
      "charge|bill … twice": 1,
      "get|have … what … pay": 1,
      "what … pay … back": 1,
      "credit … card|account": 0.5,
      "give|issue|put … credit": 1,
      "reverse … payment|charge|transaction": 1.5,
      "=return|=send … back": 1,
      "=return it|this|them|item|order|ORDER": 1,
      "like|want|need|wish|going … =return": 1,
      "MONEY … back": 1.5,
      "refund MONEY": 0.5,
      "full amount": 0.5,
      "thank|thanks … for … refund": -2,
    },
  },
  {
    kind: "status",
    cues: {
      "where be|'s": 2,
      where: 1,
      status: 2,
      track: 2,
      tracking: 2,
      "when will|do|does|can|could|should|be|shall … arrive|come|ship|deliver|here|reach|expect|get": 2,
      "know|tell|wonder|curious|ask … when … arrive|come|ship|deliver|here|reach|get": 2,
      "how long": 1.5,
      eta: 2,
      "any update|news|progress|word": 2,
      "update on": 2,
      "still|been wait": 2,
      "wait … for … order|ORDER|package|parcel|delivery|it": 1.5,
      "go through|thru": 2,
      "take|taking … so|too|this long": 1.5,
      "check|look … on|up|into|at … order|ORDER|package|parcel|delivery|it|shipment": 1.5,
      "check ORDER": 1.5,
      "what … happen": 1.5,
      "what be … going on": 1.5,
      "what be up with": 1.5,
      "has|have|did|is|was … ship|dispatch|leave|send|deliver": 1,
      "on … way": 1,
      "out for delivery": 2,
      "supposed|due|meant|expected … arrive|come|get|ship|here": 2,
      yet: 0.5,
      "NOT receive|get|see … refund|money": 3,
      "refund|money … NOT show|arrive|come|appear": 3,
      "is|be ORDER … deliver|delivered|ship|shipped|coming|arrive": 1.5,
    },
  },
  {
    kind: "list_orders",
    cues: {
      "my orders": 1,
      "order history": 2,
      "what|which orders": 2,
      "what did|have i order|buy|purchase": 2,
      "what i have|did order|buy|purchase": 2,
      "orders … i … make|place": 2,
      "list|show|see|view|check … orders": 2,
      "past|previous|recent|open|other orders": 1,
      "everything … i … order|buy|bought": 2,
      "how many orders": 2,
    },
  },
  {
    kind: "problem",
    cues: {
      "damaged|damage|broken|broke|torn|tear|ripped|rip|cracked|crack|smashed|shattered|dented|scratched|stained|defective|faulty|ruined|destroyed|crushed|leaking|leak|wet|soaked|bent|moldy|mouldy": 1,
      "NOT … arrive|come|show|turn|deliver|receive|get|reach|here": 1,
      "nothing … arrive|come|show|here": 1,
      "missing|lost|stolen|vanished|disappeared": 1,
      "wrong size|item|colour|color|product|thing|order|one|model|shoes|jacket": 1,
      "NOT fit|work|match": 1,
      "stop|stopped working": 1,
      "too small|big|large|tight|loose|short|long": 1,
      "fell|falling|came|coming apart": 1,
      "not as described|pictured|advertised": 1,
      "late|delayed|overdue": 1,
      "arrive|came|come|show … in pieces": 1,
      "hole|stain|scratch|dent": 1,
    },
  },
  {
    kind: "in_transit",
    cues: {
      "NOT … arrive|come|show|turn|deliver|reach|here": 1,
      "NOT … receive|get … parcel|package|order|ORDER|it|delivery|item|items|anything|them": 1,
      "nothing … arrive|come|show|here": 1,
      "never … get|got … it|parcel|package|order|ORDER": 1,
      "lost|stolen|vanished|disappeared": 1,
      "parcel|package|box|shipment|delivery … missing|lost|stolen": 1,
      "late|delayed|overdue": 1,
      "in|during transit|shipping|delivery|post|mail": 1,
      "on the way": 1,
      "courier|carrier|postman|driver|ups|fedex|dhl|usps|shipper": 1,
      "parcel|package|box|shipment … damaged|crushed|smashed|dented|wet|soaked|torn|ripped|broken|open|opened|squashed": 1,
      "damaged|crushed|smashed|dented|wet|soaked|torn|ripped|broken|squashed parcel|package|box|shipment": 1,
      "wrong address": 1,
      "deliver|delivered|left … wrong|neighbour|neighbor|porch|doorstep": 1,
    },
  },
];

/**
 * Which specialist a case goes to, when the request offers specialists (their tools): the first route whose kinds
 * include the concern's and whose condition holds. A status question, a cancellation, an address change, a person or
 * a list of orders is never a specialist's case: the front-line agent answers those itself.
 */
export interface SpecialistRoute {
  specialist: "delivery" | "returns";
  kinds: readonly IntentKind[];
  /** "in_transit": only when the trouble happened on the way; "any": always */
  when: "in_transit" | "any";
}

export const SPECIALIST_ROUTES: readonly SpecialistRoute[] = [
  { specialist: "delivery", kinds: ["refund", "replace"], when: "in_transit" },
  { specialist: "returns", kinds: ["refund", "replace"], when: "any" },
];
