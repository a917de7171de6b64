import { describe, expect, it } from "vitest";
import { AGENT_AS_TOOL_MARKER, localId, namespacedId, parseNamespacedId, scopeOf, unusableToolUseIds } from "./namespace";

describe("namespaced interrupt ids", () => {
  it.each([["toolu_01"], ["a:b"], ["50%"], ["%3A"], ["v1"], ["v1:agent_as_tool:toolu_9:x"], [""]])(
    "outer id %j round-trips and owns its scope",
    (outer) => {
      const id = namespacedId(scopeOf(outer), "toolu_inner:1");
      expect(id.startsWith(AGENT_AS_TOOL_MARKER)).toBe(true);
      expect(parseNamespacedId(id)).toEqual(outer === "" ? null : { outer, inner: "toolu_inner:1" });
    },
  );

  it("an outer id containing ':' cannot capture another call's ids (prefix matching would)", () => {
    const a = namespacedId(scopeOf("call"), "x");
    const b = namespacedId(scopeOf("call:x"), "y");
    expect(localId(scopeOf("call"), b)).toBeNull();
    expect(localId(scopeOf("call"), a)).toBe("x");
    expect(localId(scopeOf("call:x"), b)).toBe("y");
  });

  it("an outer id that is exactly the marker, or 'v1', never captures ids the coordinator raised itself", () => {
    expect(localId(scopeOf("v1"), "v1:agent_as_tool:x:y")).toBeNull();
    expect(localId(scopeOf(AGENT_AS_TOOL_MARKER), namespacedId(scopeOf("z"), "q"))).toBeNull();
    expect(parseNamespacedId("toolu_plain")).toBeNull();
  });

  it("nests: a specialist inside a specialist gets a scope of its own", () => {
    const level1 = namespacedId(scopeOf("outer"), "mid");
    const level2 = namespacedId(scopeOf(level1), "inner");
    expect(parseNamespacedId(level2)).toEqual({ outer: level1, inner: "inner" });
    expect(localId(scopeOf(level1), level2)).toBe("inner");
    expect(localId(scopeOf("outer"), level2)).toBeNull();
  });
});

describe("tool_use ids a model's reply may not use", () => {
  it("an id repeated in the reply, already used earlier in the conversation, or opening with the marker", () => {
    expect(unusableToolUseIds([{ id: "a" }, { id: "b" }], new Set(["c"]))).toBeNull();
    expect(unusableToolUseIds([{ id: "a" }, { id: "a" }])).toMatch(/appears twice/);
    // The provider refuses a request carrying one id twice, wherever the first one is.
    expect(unusableToolUseIds([{ id: "b" }, { id: "c" }], new Set(["c"]))).toMatch(/c was already used earlier/);
    expect(unusableToolUseIds([{ id: `${AGENT_AS_TOOL_MARKER}x:y` }])).toMatch(/reserved prefix/);
  });
});
