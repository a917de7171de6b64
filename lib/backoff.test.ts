import { describe, expect, it } from "vitest";
import { backoffMs } from "@/lib/runtime/retry";
import { doublingDelayMs, FailuresOfAPass, KeyedBackoff } from "./backoff";

describe("the product's backoffs", () => {
  it("double from their base at each failure, up to their cap (attempt 1: after the first failure)", () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => doublingDelayMs(n, 1000, 10_000))).toEqual([1000, 1000, 2000, 4000, 8000, 10_000]);
  });

  it("a run's retries: full jitter over the upper half of that delay", () => {
    for (let attempt = 1; attempt <= 12; attempt++) {
      const ceiling = doublingDelayMs(attempt, 2000, 300_000);
      const waits = Array.from({ length: 50 }, () => backoffMs(attempt, 2000));
      for (const w of waits) {
        expect(w).toBeGreaterThanOrEqual(ceiling / 2);
        expect(w).toBeLessThanOrEqual(ceiling);
      }
    }
  });
});

describe("items that failed (approvals whose expiry failed, shops whose audit records could not be sealed)", () => {
  it("wait 2 s after the first failure, twice as long after each next, 5 minutes at most", () => {
    const r = new KeyedBackoff();
    const waits = Array.from({ length: 10 }, () => r.failed("h1", 0).retryInMs);
    expect(waits).toEqual([2000, 4000, 8000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000]);
  });

  it("are left out until their retry comes, and the earliest retry is the next time to look", () => {
    const r = new KeyedBackoff();
    r.failed("h1", 1000); // retry at 3000
    r.failed("h2", 1500);
    r.failed("h2", 1500); // retry at 5500
    expect(r.waiting(2000)).toEqual(["h1", "h2"]);
    expect(r.nextRetryAt(2000)).toEqual(new Date(3000));
    expect(r.waiting(3000)).toEqual(["h2"]);
    expect(r.nextRetryAt(3000)).toEqual(new Date(5500));
    expect(r.waiting(6000)).toEqual([]);
    expect(r.nextRetryAt(6000)).toBeNull();
  });

  it("start afresh once settled, and are forgotten when their retry comes and they are no longer due", () => {
    const r = new KeyedBackoff();
    r.failed("h1", 0);
    r.failed("h1", 0);
    r.settled("h1");
    expect(r.failed("h1", 0).failures).toBe(1);
    r.failed("h2", 0); // retry at 2000
    r.forgetAllBut(new Set(), 1000); // h1 and h2 still wait: kept
    expect(r.waiting(1000)).toEqual(["h1", "h2"]);
    r.forgetAllBut(new Set(["h1"]), 2500); // both retries came; h2 is no longer due (decided elsewhere)
    expect(r.failed("h1", 2500).failures).toBe(2);
    expect(r.failed("h2", 2500).failures).toBe(1);
  });

  it("are all named while remembered, whether or not their retry has come", () => {
    const r = new KeyedBackoff();
    r.failed("e1", 0); // retry at 2000
    r.failed("e2", 1000); // retry at 3000
    expect(r.waiting(2500)).toEqual(["e2"]);
    expect(r.failingKeys()).toEqual(["e1", "e2"]);
    r.settled("e1");
    expect(r.failingKeys()).toEqual(["e2"]);
  });
});

describe("the failures of one pass", () => {
  it("are logged one line per kind: one item with its fields, many alike with their count and ids", () => {
    const failures = new FailuresOfAPass("handoffId", {
      one: "expiring an approval failed",
      many: (n) => `expiring ${n} approvals failed alike`,
    });
    const refused = new Error("refused by a constraint");
    for (const id of ["h1", "h2", "h3"]) failures.add(refused, { handoffId: id, tenantId: "acme", failures: 1, retryInMs: 2000 });
    const odd = new Error("something else");
    failures.add(odd, { handoffId: "h4", tenantId: "globex", failures: 2, retryInMs: 4000 });
    const lines: Array<{ fields: Record<string, unknown>; msg: string }> = [];
    failures.log((fields, msg) => lines.push({ fields, msg }));
    expect(lines).toEqual([
      {
        msg: "expiring 3 approvals failed alike",
        fields: { err: refused, handoffId: "h1", tenantId: "acme", failures: 1, retryInMs: 2000, count: 3, handoffIds: ["h1", "h2", "h3"] },
      },
      { msg: "expiring an approval failed", fields: { err: odd, handoffId: "h4", tenantId: "globex", failures: 2, retryInMs: 4000 } },
    ]);
  });

  it("count as one kind when their messages differ only by the row they name (an id, a quoted value, a long number)", () => {
    const failures = new FailuresOfAPass("eventId", { one: "one failed", many: (n) => `${n} failed alike` });
    const ids = ["3f2a9c1e-0b7d-4c55-9a2e-1d2c3b4a5f60", "8e1d2c3b-4a5f-4c55-9a2e-3f2a9c1e0b7d"];
    for (const id of ids) failures.add(new Error(`tool phase of run ${id} left calls unsettled`), { eventId: id });
    failures.add(new Error("order 'A-1002' of shop cm4x9q2l80000abcdefghijkl is locked"), { eventId: "e3" });
    failures.add(new Error("order 'B-7' of shop cm4x9q2l80000zyxwvutsrqpo is locked"), { eventId: "e4" });
    failures.add(new Error("seq 1234567 is past the end"), { eventId: "e5" });
    failures.add(new Error("seq 7654321 is past the end"), { eventId: "e6" });
    // What tells kinds apart stays: a constraint's name, a type's size.
    failures.add(new Error('violates check constraint "amount_positive"'), { eventId: "e7" });
    failures.add(new Error('violates check constraint "currency_known"'), { eventId: "e8" });
    failures.add(new Error("value too long for type character varying(64)"), { eventId: "e9" });
    failures.add(new Error("value too long for type character varying(32)"), { eventId: "e10" });
    const lines: Array<{ fields: Record<string, unknown>; msg: string }> = [];
    failures.log((fields, msg) => lines.push({ fields, msg }));
    expect(lines.map((l) => [l.msg, l.fields.eventIds ?? l.fields.eventId])).toEqual([
      ["2 failed alike", ids],
      ["2 failed alike", ["e3", "e4"]],
      ["2 failed alike", ["e5", "e6"]],
      ["one failed", "e7"],
      ["one failed", "e8"],
      ["one failed", "e9"],
      ["one failed", "e10"],
    ]);
  });

  it("log nothing when nothing failed", () => {
    const lines: string[] = [];
    new FailuresOfAPass("tenantId", { one: "x", many: () => "y" }).log((_f, msg) => lines.push(msg));
    expect(lines).toEqual([]);
  });
});
