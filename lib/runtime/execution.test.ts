// A tool whose database was out of reach is retried, not failed for good: found by `npm run load`, where a busy pool
// ("timeout exceeded when trying to connect") turned an approved refund into a FAILED call that was never retried.
import { describe, expect, it } from "vitest";
import { ToolError } from "@/lib/tools/types";
import { failureOf } from "./execution";

describe("failureOf", () => {
  it("a pool that could not hand out a connection in time is a transient failure", () => {
    const body = failureOf(new Error("timeout exceeded when trying to connect"), "refund_order");
    expect(body).toMatchObject({ error_category: "transient", is_retryable: true });
    expect(body.message).toMatch(/nothing was done yet/);
  });

  it("so is a connection the server dropped, or a refused one", () => {
    expect(failureOf(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }), "x").is_retryable).toBe(
      true,
    );
    expect(failureOf(new Error("Connection terminated unexpectedly"), "x").is_retryable).toBe(true);
  });

  it("a bug stays a bug: not retried, and the model is told nothing is known to have happened", () => {
    const body = failureOf(new TypeError("cannot read properties of undefined"), "refund_order");
    expect(body).toMatchObject({ error_category: "system", is_retryable: false });
    expect(body.message).toMatch(/Do not claim success/);
  });

  it("a tool's own refusal is passed on as it is", () => {
    const body = failureOf(new ToolError("business_rule", "Order A-1002 was already refunded.", false), "refund_order");
    expect(body).toMatchObject({ error_category: "business_rule", is_retryable: false });
  });
});
