import { describe, expect, it } from "vitest";
import { readClause } from "./cues";
import { domainVocabulary, correctWord } from "./spelling";
import { INTENT_TABLE } from "./intent-table";
import { findOrderNumbers } from "./order-numbers";
import { analyse, textOf } from "./tokens";
import { understand } from "./understand";

const kinds = (text: string) => understand(text).concerns.map((c) => (c.order ? `${c.kind} ${c.order}` : c.kind));
const amounts = (text: string) => analyse(text).amounts;
const known = (w: string) => ["please", "return"].includes(w);

describe("order numbers", () => {
  it.each([
    ["A-1002", ["A-1002"]],
    ["a1002", ["A-1002"]],
    ["#A-1002", ["A-1002"]],
    ["order # a1002", ["A-1002"]],
    ["a 1002", ["A-1002"]],
    ["A – 1002 and A_2001", ["A-1002", "A-2001"]],
    ["A-10O2 (a letter O for a zero)", ["A-1002"]],
    ["AB-12345", ["AB-12345"]],
    ["Ａ－１００２ (full-width)", ["A-1002"]],
    ["A\u20111002 (a non-breaking hyphen)", ["A-1002"]],
    ["A-1002, A-1002 again", ["A-1002"]],
  ])("%s → %j", (text, expected) => {
    expect(findOrderNumbers(text)).toEqual(expected);
  });

  it.each([
    "order 1001", // no prefix: never guessed
    "#1001",
    "order no. 1001",
    "I paid a 100 dollars", // a lone letter before an amount
    "a 2003 model",
    "usd 500",
    "I am 3001 km away",
    "sam2003@example.com", // an email is not order SAM-2003
    "tracking 1ZA1001",
    "A-1001234567",
  ])("%s → nothing", (text) => {
    expect(findOrderNumbers(text)).toEqual([]);
  });
});

describe("amounts", () => {
  it.each([
    ["$42.5", 4250],
    ["$ 820", 82000],
    ["$1,000", 100000],
    ["820 dollars", 82000],
    ["USD 120", 12000],
    ["60$", 6000],
    ["fifty bucks", 5000],
    ["eight hundred and twenty dollars", 82000],
    ["ninety-nine dollars", 9900],
    ["a hundred bucks", 10000],
    ["two thousand five hundred dollars", 250000],
    ["$42 and 50 cents", 4250],
    ["5 dollars and 50 cents", 550],
    ["a bare 42.50", 4250],
    ["fourty dollars", 4000], // misspelt number word
  ])("%s → %i cents", (text, cents) => {
    expect(amounts(text)).toEqual([cents]);
  });

  it.each(["2 shirts", "refund 3 items", "one of them", "A-1002", "about 20 minutes ago"])("%s → no amount", (text) => {
    expect(amounts(text)).toEqual([]);
  });

  it("picks the amount asked for, not the price paid", () => {
    expect(understand("I paid $250 for A-1002 but only want $100 back").concerns).toMatchObject([
      { kind: "refund", order: "A-1002", amountCents: 10000 },
    ]);
    expect(understand("Could you refund me the $75 I paid for A-2002?").concerns).toMatchObject([{ amountCents: 7500 }]);
  });
});

describe("negation", () => {
  it("a denied request counts for nothing; what is asked instead does", () => {
    expect(kinds("I don't want a refund, just a replacement for A-1002")).toEqual(["replace A-1002"]);
    expect(kinds("no need to cancel A-2001")).toEqual([]);
    expect(kinds("Not a replacement — a refund for A-1002")).toEqual(["refund A-1002"]);
    expect(kinds("a replacement won't help, refund A-1004")).toEqual(["refund A-1004"]);
  });

  it("a negation about receiving, a pushing question and an answering 'no' do not deny", () => {
    expect(kinds("I still haven't received my refund for A-1002")).toEqual(["status A-1002"]);
    expect(kinds("can't you just refund A-1001?")).toEqual(["refund A-1001"]);
    expect(kinds("No I want a refund for A-1001")).toEqual(["refund A-1001"]);
  });

  it("a negation inside a cue's words is not that cue ('was never delivered' is no status question)", () => {
    expect(kinds("The parcel for A-1003 was never delivered. Could you refund me?")).toEqual(["refund A-1003"]);
  });

  it("a negation ends at the clause: 'don't cancel X and refund Y' still refunds Y", () => {
    expect(kinds("don't cancel A-2001 and refund A-1001")).toEqual(["refund A-1001"]);
  });
});

describe("spelling", () => {
  it.each([
    ["refnd", "refund"],
    ["ordr", "order"],
    ["adress", "address"],
    ["cancle", "cancel"],
    ["replacment", "replacement"],
    ["mony", "money"], // a tie (many/money) goes to the word the typo drops a letter of
    ["pleeease", "please"],
    ["u", "you"],
    ["cn", "can"],
  ])("%s → %s", (typo, word) => {
    expect(correctWord(typo, known)).toBe(word);
  });

  it("leaves known words, short words and unrelated words alone", () => {
    expect(correctWord("return", known)).toBe("return");
    expect(correctWord("zq", known)).toBe("zq");
    expect(correctWord("xylophone", known)).toBe("xylophone");
  });

  it("does not correct names inside a sentence", () => {
    const text = textOf(analyse("please deliver it to 9 Lake View, Denver, 80202, US").tokens);
    expect(text).toContain("Denver");
  });

  it("corrects towards the intent table's own words", () => {
    for (const row of INTENT_TABLE) expect(domainVocabulary().length).toBeGreaterThan(Object.keys(row.cues).length);
    expect(domainVocabulary()).toEqual(expect.arrayContaining(["refund", "replacement", "cancel", "address", "forty"]));
  });
});

describe("the intent table", () => {
  it.each([
    ["put the money back on my card", "refund"],
    ["get what I paid back", "refund"],
    ["I want my money", "refund"],
    ["reimburse me", "refund"],
    ["I'll do a chargeback", "refund"],
    ["talk to a manager about my refund", "human"], // a person beats everything
    ["refund my shipping", "policy_gap"], // a policy question beats a refund
    ["where is my refund", "status"],
    ["what orders do I have", "list_orders"],
    ["refund both my orders", "refund"], // a tie goes to the earlier row
    ["thanks for the refund", undefined], // a negative cue takes it back
  ])("%s → %s", (text, kind) => {
    expect(readClause(analyse(text).tokens).kind).toBe(kind);
  });
});

describe("several concerns in one message", () => {
  it("splits requests, keeps lists of orders and addresses whole", () => {
    expect(kinds("cancel A-2001 and send a replacement for A-2003")).toEqual(["cancel A-2001", "replace A-2003"]);
    expect(kinds("refund A-1001 and A-1002")).toEqual(["refund A-1001", "refund A-1002"]);
    expect(kinds("please cancel A-2002 but keep A-2001")).toEqual(["cancel A-2002"]);
    expect(understand("change the address of A-2002 to 12 New Street, Springfield, 12345, US").clauses).toHaveLength(1);
  });

  it("a problem is the reason for the request beside it, or a status question when nothing else is asked", () => {
    expect(kinds("A-1003 never showed up. I want the full $820 back today.")).toEqual(["refund A-1003"]);
    expect(kinds("A-1003 never showed up.")).toEqual(["status A-1003"]);
    expect(kinds("First, A-1003 is missing. Second, I'd like to return A-1004 for a refund.")).toEqual(["status A-1003", "refund A-1004"]);
  });

  it("'both' takes every order named before; a cancellation includes its refund; one concern per kind and order", () => {
    expect(kinds("A-1002 came smashed and A-1004 never showed up, I want refunds for both")).toEqual(["refund A-1002", "refund A-1004"]);
    expect(kinds("Please cancel a-2001 and refund me")).toEqual(["cancel A-2001"]);
    expect(kinds("refund A-1001 please. refund A-1001!")).toEqual(["refund A-1001"]);
  });

  it("a request that needs an exception goes to a person whole", () => {
    expect(kinds("I ordered A-1001 last year, can I still return it?")).toEqual(["policy_gap A-1001"]);
    expect(kinds("Please replace the broken lamp from A-1004 and refund the shipping on it")).toEqual([
      "replace A-1004",
      "policy_gap A-1004",
    ]);
  });

  it("typos, a spaced order number and a dash between two requests", () => {
    expect(kinds("hii, cn u refnd my ordr A1001 pls — also where's a 2002??")).toEqual(["refund A-1001", "status A-2002"]);
  });
});

describe("odd input", () => {
  it("never throws, and finds nothing where there is nothing", () => {
    const odd = ["", " ", "\n\n", "...", "$", "$$$ 5", "—", "A-", "#", "and and and", "n't", "a".repeat(4000), "退款", "\u0000"];
    for (const text of odd) expect(understand(text).concerns).toEqual([]);
    // A deterministic soup of letters, digits and punctuation.
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = "abcdefghijklmnopqrstuvwxyz ABC0123456789-#$.,;!?'\n—_@";
    for (let i = 0; i < 300; i++) {
      const text = Array.from({ length: Math.floor(next() * 60) }, () => alphabet[Math.floor(next() * alphabet.length)]).join("");
      expect(() => understand(text)).not.toThrow();
    }
  });
});
