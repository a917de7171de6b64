import { describe, expect, it } from "vitest";
import { carriedInWords, requestSizeInWords } from "./model-call-words";

const call = (m: Partial<Parameters<typeof carriedInWords>[0]>) => ({
  scope: null,
  error: null,
  throughSeq: 12,
  contextFromSeq: null,
  contextSummaryId: null,
  ...m,
});

describe("what a model request carried, in words", () => {
  it("the whole transcript, before any cut", () => {
    expect(carriedInWords(call({}))).toBe("every message through #12");
  });
  it("after a summary cut: the summary, then the messages from the cut on", () => {
    expect(carriedInWords(call({ throughSeq: 240, contextFromSeq: 201, contextSummaryId: "sum_1" }))).toBe(
      "the summary of #200 and before, then messages #201–#240",
    );
  });
  it("a summary that covers every message (nothing after the cut to carry verbatim)", () => {
    expect(carriedInWords(call({ throughSeq: 240, contextFromSeq: null, contextSummaryId: "sum_2" }))).toBe(
      "the summary of every message through #240",
    );
  });
  it("a specialist's request carries its own messages, not the transcript", () => {
    expect(carriedInWords(call({ scope: "returns" }))).toBe("the specialist's own brief and work");
  });
  it("a failed request recorded none", () => {
    expect(carriedInWords(call({ error: "overloaded", contextFromSeq: null }))).toBe("not recorded (the request failed)");
  });
  it("its counted size and cost", () => {
    expect(requestSizeInWords({ requestTokens: 6490, costMicros: 2812 })).toBe("6,490 tokens · $0.0028");
    expect(requestSizeInWords({ requestTokens: null, costMicros: 0 })).toBe("not counted · $0.0000");
  });
});
