import { describe, expect, it, vi } from "vitest";

// Anonymous callers: every exported server action of the console refuses with UNAUTHENTICATED before
// touching anything. The session is stubbed as "no session" (what a request without cookies resolves to);
// the database and runtime must never be reached, so they throw if they are.
vi.mock("@/lib/auth/session", () => ({ getSessionClaims: async () => null }));
vi.mock("@/lib/db/client", () => ({
  getPrisma: async () => {
    throw new Error("the database must not be reached by an anonymous call");
  },
}));
vi.mock("@/lib/runtime/shared-runtime", () => ({
  getRuntime: async () => {
    throw new Error("the runtime must not be reached by an anonymous call");
  },
}));

describe("console server actions, called anonymously", async () => {
  const actions = await import("./console");
  const inputs: Record<string, unknown> = {
    claimHandoffAction: { handoffId: "h1" },
    releaseHandoffAction: { handoffId: "h1" },
    decideHandoffAction: { handoffId: "h1", decision: "approve", version: 1 },
    takeOverConversationAction: { conversationId: "c1" },
    replyAsStaffAction: { conversationId: "c1", text: "hello" },
    handBackConversationAction: { conversationId: "c1" },
    retryDeadLetterAction: { runId: "r1" },
  };

  it("covers every exported action", () => {
    expect(Object.keys(actions).sort()).toEqual(Object.keys(inputs).sort());
  });

  it.each(Object.keys(inputs))("%s → UNAUTHENTICATED", async (name) => {
    const action = (actions as unknown as Record<string, (i: unknown) => Promise<unknown>>)[name]!;
    expect(await action(inputs[name])).toEqual({ ok: false, error: { code: "UNAUTHENTICATED", message: "Sign in to continue." } });
    // Even with garbage input, anonymity is what is reported (nothing about the input leaks).
    expect(await action({ nonsense: true })).toMatchObject({ ok: false, error: { code: "UNAUTHENTICATED" } });
  });
});
