import type Anthropic from "@anthropic-ai/sdk";
import { describe, expect, it } from "vitest";
import { buildModelMessages, transcriptViolations, withoutBlankText } from "./transcript";

const text = (t: string) => ({ type: "text" as const, text: t });
const use = (id: string) => ({ type: "tool_use" as const, id, name: "lookup_order", input: { order_number: "A-1001" } });
const result = (id: string) => ({ type: "tool_result" as const, tool_use_id: id, content: "{}" });

describe("what the provider refuses never goes into a request", () => {
  it("a blank text block is left out of what the transcript keeps; content without one is kept as it is", () => {
    const content = [text("Hello"), use("t1")];
    expect(withoutBlankText(content)).toBe(content);
    expect(withoutBlankText([text(" \n"), use("t1")])).toEqual([use("t1")]);
    expect(withoutBlankText([text("")])).toEqual([]);
  });

  it("rows stored with an empty message or a blank text block still build a request the provider takes", () => {
    // Stored before the runtime kept them out: the conversation must not be refused for ever after.
    const rows = [
      { role: "user", content: [text("hi")] },
      { role: "assistant", content: [] },
      { role: "user", content: [text("<support_note>stop-check: Your reply was empty.</support_note>")] },
      { role: "assistant", content: [text("\n\n"), use("t1")] },
      { role: "user", content: [result("t1")] },
      { role: "assistant", content: [text("  ")] },
    ];
    const messages = buildModelMessages(rows);
    expect(messages).toEqual([
      { role: "user", content: [text("hi"), text("<support_note>stop-check: Your reply was empty.</support_note>")] },
      { role: "assistant", content: [use("t1")] },
      { role: "user", content: [result("t1")] },
    ]);
    expect(transcriptViolations(messages)).toEqual([]);
  });

  it("the last guard before a request names an empty message, a blank text block and a tool_use id used twice", () => {
    const messages: Anthropic.MessageParam[] = [
      { role: "user", content: [text("hi")] },
      { role: "assistant", content: [text(" "), use("t1")] },
      { role: "user", content: [result("t1")] },
      { role: "assistant", content: [] },
      { role: "user", content: [text("and A-1002?")] },
      { role: "assistant", content: [use("t1")] },
      { role: "user", content: [result("t1")] },
    ];
    expect(transcriptViolations(messages)).toEqual([
      "message 1: a blank text block",
      "message 3: no content",
      "message 5: tool_use id t1 is used twice",
    ]);
  });
});
