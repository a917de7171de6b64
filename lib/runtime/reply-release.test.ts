import { describe, expect, it } from "vitest";
import { SYSTEM_PROMPT } from "@/lib/agent/prompt";
import { quotesInstructions } from "@/lib/agent/prompt-leak";
import { ReplyRelease, safeToRelease } from "./reply-release";
import { stopCheck } from "./stop-check";

/** Streams `text` in chunks of `size` characters; returns every text shown, in order. */
function stream(text: string, effectsDone: string[], size = 3): string[] {
  const r = new ReplyRelease({ effectsDone });
  const shown: string[] = [];
  for (let i = 0; i < text.length; i += size) {
    const out = r.push(text.slice(i, i + size));
    if (out !== null) shown.push(out);
  }
  return shown;
}

describe("releasing a streamed reply sentence by sentence", () => {
  it("shows complete sentences as they finish, never a half sentence", () => {
    const shown = stream("Thanks for waiting. Your order A-1001 was delivered on Monday. Anything else?", []);
    expect(shown).toEqual(["Thanks for waiting.", "Thanks for waiting. Your order A-1001 was delivered on Monday."]);
  });

  it.each([
    "I've refunded $250.00 on A-1002.",
    "Your refund of $250.00 has been issued.",
    "The money is back on your card.",
    "I cancelled A-2001 for you.",
    "A replacement is on its way.",
    "Your delivery address is now 1 Main St.",
    "All done!",
    "That's been taken care of.",
  ])("holds %j when the run did no such thing — and everything after it", (claim) => {
    for (const size of [1, 2, 5, 50]) {
      const shown = stream(`Let me check. ${claim} Anything else I can help with?`, [], size);
      expect(shown.join("\n"), `chunks of ${size}`).not.toContain(claim.slice(0, 12));
      expect(shown.at(-1) ?? "").toBe(shown.length ? "Let me check." : "");
    }
  });

  it.each(["I've issued a full credit for A-1002 to your card.", "I have sent it to your card."])(
    "holds %j, a wording the stop check blocks as a false claim",
    (claim) => {
      // The release and the stop check must agree: a draft the stop check then sends back was on screen for a moment.
      expect(stopCheck({ reply: claim, effectsDone: [], ordersRaised: [] }).map((p) => p.kind)).toContain("false_claim");
      for (const size of [1, 5, 50]) {
        const shown = stream(`Thanks for waiting. ${claim} Anything else?`, [], size);
        expect(shown.join("\n"), `chunks of ${size}`).not.toContain(claim.slice(0, 12));
      }
    },
  );

  it("instructions quoted a few words per sentence are held once the sentences together quote them", () => {
    // 24 words of the system prompt as sentences of 4: no sentence alone is a quote, the reply is (the stop check's rule).
    const words = (SYSTEM_PROMPT.match(/[A-Za-z0-9']+/g) ?? []).slice(0, 24);
    const sentences: string[] = [];
    for (let i = 0; i < words.length; i += 4) sentences.push(`${words.slice(i, i + 4).join(" ")}.`);
    const quoted = sentences.join(" ");
    expect(quotesInstructions(quoted)).toBe(true);
    for (const size of [1, 5, 50]) {
      const shown = stream(`${quoted} Anything else?`, [], size);
      expect(
        shown.filter((t) => quotesInstructions(t)),
        `chunks of ${size}`,
      ).toEqual([]);
    }
  });

  it("a claim split across any two deltas is still held", () => {
    const text = "Okay. I have refunded it. Bye.";
    for (let cut = 1; cut < text.length; cut++) {
      const r = new ReplyRelease({ effectsDone: [] });
      const outs = [r.push(text.slice(0, cut)), r.push(text.slice(cut)), r.push(" ")].filter(Boolean);
      expect(outs.join("|")).not.toMatch(/refund/);
    }
  });

  it("a sentence about what the run really did streams", () => {
    const shown = stream("Good news. Your refund of $42.50 on A-1001 has been issued. Anything else?", ["refund_order"]);
    expect(shown.at(-1)).toBe("Good news. Your refund of $42.50 on A-1001 has been issued.");
  });

  it("a true refund claim does not clear a cancellation claim", () => {
    expect(safeToRelease("Refunded, and I cancelled the order.", { effectsDone: ["refund_order"] })).toBe(false);
  });

  it("the unfinished tail is never shown", () => {
    const r = new ReplyRelease({ effectsDone: [] });
    expect(r.push("Hello there")).toBeNull();
    expect(r.released).toBe("");
    expect(r.push(". Your parcel is")).toBe("Hello there.");
    expect(r.released).toBe("Hello there.");
  });
});
