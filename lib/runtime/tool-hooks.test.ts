import { describe, expect, it } from "vitest";
import { redact } from "./tool-hooks";

// What the model reads of a tool's result: card-like numbers masked — but never a piece of an id. A refund id (a
// UUID) whose last groups happened to be digits was masked in the middle ("459a-****5434"), so the model read an id
// that does not exist (and the replay test failed on it now and then, the id being random).
describe("redact", () => {
  it("masks a card number, spaced, dashed or run together, to its last four digits", () => {
    expect(redact("card 4111 1111 1111 1111 on file")).toBe("card ****1111 on file");
    expect(redact("4242-4242-4242-4242.")).toBe("****4242.");
    expect(redact({ note: "paid with 5555555555554444" })).toEqual({ note: "paid with ****4444" });
  });

  it("leaves an id alone even when a run of it is all digits", () => {
    const id = "eb562b0a-6d69-459a-8123-987654325434";
    expect(redact({ refund_id: id })).toEqual({ refund_id: id });
    expect(redact(`refund ${id} issued`)).toBe(`refund ${id} issued`);
  });

  it("drops secret-looking keys", () => {
    expect(redact({ order: "A-1001", api_key: "sk-1", cardNumber: "4111" })).toEqual({ order: "A-1001" });
  });
});
