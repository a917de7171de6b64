import { describe, expect, it } from "vitest";
import { stopCheck } from "./stop-check";

const claims = (reply: string, effectsDone: string[] = []) =>
  stopCheck({ reply, effectsDone, ordersRaised: [] }).filter((p) => p.kind === "false_claim");

describe("the stop check", () => {
  it.each([
    "I've refunded $250.00 on A-1002.",
    "Your order has been refunded.",
    "The refund was processed this morning.",
    "I have cancelled A-2001.",
    "A replacement has been shipped.",
    "I've updated the delivery address.",
  ])("catches a claim the run did not make true: %j", (reply) => {
    expect(claims(reply)).toHaveLength(1);
  });

  it("lets a claim through when the run did it", () => {
    expect(claims("I've refunded $42.50 on A-1001.", ["refund_order"])).toEqual([]);
  });

  it.each([
    "Nothing has been refunded yet: A-1002 needs a person's approval.",
    "Your order has not been refunded; a person must approve it first.",
    "It hasn't been cancelled yet.",
    "No replacement has been shipped so far.",
    "The address was never updated.",
  ])("does not mistake an honest 'not done' for a claim: %j", (reply) => {
    expect(claims(reply)).toEqual([]);
  });

  it("a negation elsewhere in the reply does not excuse a claim", () => {
    expect(claims("Nothing else is needed. I've refunded $250.00 on A-1002.")).toHaveLength(1);
    expect(claims("I have not cancelled it, but your order has been refunded.")).toHaveLength(1);
    expect(claims("No worries I've refunded $250.00 on A-1002.")).toHaveLength(1);
    expect(claims("Not a problem, your order has been refunded.")).toHaveLength(1);
  });
});
