import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ApiDeps } from "@/lib/api/handler";
import { API_SCOPES } from "@/lib/api/scopes";
import { issueApiToken } from "@/lib/api/tokens";
import { apiClient } from "../api/api-client";
import { createHarness, type Harness } from "../runtime-harness";
import { anyText, FUZZ_SEED, pairingProblems, report, wellFormed, runs, watchUnhandled } from "./fuzz-support";

// Generated requests to every /api/v1 endpoint (the real handlers, on a test database and runtime): path parameters,
// query strings and bodies of every shape, raw bytes and chunked uploads included. Never a 5xx, never INTERNAL, never
// an unhandled rejection; the conversation behind the parked handoff keeps its pairing contract whatever is decided.
const CASES = runs(2500);

let h: Harness;
let call: ReturnType<typeof apiClient>;
let token: string;
let known: { handoffId: string; runId: string; conversationId: string };
beforeAll(async () => {
  h = await createHarness();
  const deps: ApiDeps = { getDb: async () => h.db, getRuntime: async () => h.deps, rateLimit: () => ({ points: 1e9, windowSeconds: 60 }) };
  call = apiClient(deps);
  token = (await issueApiToken(h.db, { tenantId: h.acme.id, name: "fuzz", scopes: [...API_SCOPES], issuedBy: { operator: true } })).token;
  h.script.push({
    reply: {
      content: [{ type: "tool_use", name: "refund_order", input: { order_number: "A-1002", amount_cents: 25000, reason: "damaged" } }],
      stop_reason: "tool_use",
    },
  });
  const out = await h.say("refund A-1002 please", { customer: "dana@example.com" });
  known = { handoffId: out.handoffs[0]!.id, runId: out.runId!, conversationId: out.conversationId };
});
afterAll(async () => {
  await h.close();
});

const id = () =>
  fc.oneof(anyText, fc.constantFrom("@handoff", "@run", "@conversation", "00000000-0000-0000-0000-000000000000", "..", "%00"));
const decisionBody = fc.record(
  {
    decision: fc.oneof(fc.constantFrom("approve", "deny", "edit"), anyText, fc.anything({ maxDepth: 1 })),
    version: fc.oneof(fc.integer({ min: -2, max: 5 }), fc.double(), anyText),
    actor: fc.oneof(fc.constantFrom("raj@acme.test", "rita@acme.test", "gus@globex.test", " RAJ@ACME.TEST "), anyText),
    reason: fc.oneof(anyText, fc.constant(undefined)),
    editedInput: fc.oneof(
      fc.constant(undefined),
      fc.anything({ maxDepth: 2 }),
      fc.record({ amount_cents: fc.integer(), order_number: anyText }),
    ),
  },
  { requiredKeys: [] },
);
type Sent = { json: unknown } | { raw: string } | { chunked: number } | null;
const body: fc.Arbitrary<Sent> = fc.oneof(
  { weight: 5, arbitrary: decisionBody.map((json) => ({ json })) },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 2 }).map((json) => ({ json })) },
  { weight: 1, arbitrary: anyText.map((raw) => ({ raw })) },
  { weight: 1, arbitrary: fc.integer({ min: 33_000, max: 40_000 }).map((chunked) => ({ chunked })) },
  { weight: 1, arbitrary: fc.constant(null) },
);
const query = fc.dictionary(fc.oneof(fc.constantFrom("status", "kind", "limit", "cursor", "after", "conversation"), anyText), anyText, {
  maxKeys: 3,
});
const request = fc.record({
  endpoint: fc.constantFrom(
    "GET /handoffs",
    "GET /handoffs/{id}",
    "POST /handoffs/{id}/decision",
    "GET /runs/{id}",
    "GET /conversations",
    "GET /openapi.json",
  ),
  id: id(),
  query,
  body,
  contentType: fc.constantFrom("application/json", "text/plain", "application/json; charset=utf-8"),
});

function chunked(bytes: number) {
  const piece = new TextEncoder().encode("[".repeat(1024));
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(c) {
      if (sent >= bytes) return c.close();
      sent += piece.byteLength;
      c.enqueue(piece);
    },
  });
}

it(`${CASES} generated API requests: no 5xx, never INTERNAL`, { timeout: 600_000 }, async () => {
  const unhandled = watchUnhandled();
  const statuses = new Map<number, number>();
  let cases = 0;
  let failures = 1;
  try {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        cases++;
        const [method, template] = r.endpoint.split(" ") as ["GET" | "POST", string];
        const idValue =
          r.id === "@handoff" ? known.handoffId : r.id === "@run" ? known.runId : r.id === "@conversation" ? known.conversationId : r.id;
        const path = template.replace("{id}", encodeURIComponent(wellFormed(idValue)));
        const qs = new URLSearchParams(r.query).toString();
        const b = method === "POST" ? r.body : null;
        const res = await call(method, `${path}${qs ? `?${qs}` : ""}`, {
          token,
          contentType: b ? r.contentType : undefined,
          ...(b && "json" in b ? { rawBody: JSON.stringify(b.json) ?? "" } : {}),
          ...(b && "raw" in b ? { rawBody: b.raw } : {}),
          ...(b && "chunked" in b ? { stream: chunked(b.chunked) } : {}),
        }).catch((err: unknown) => {
          // A path the client cannot route (e.g. an id with a slash decoded into it) is not a server answer.
          if (err instanceof Error && err.message.startsWith("no endpoint")) return null;
          throw err;
        });
        if (!res) return;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
        if (res.status >= 400) expect(res.body.error.code).not.toBe("INTERNAL");
      }),
      { numRuns: CASES, seed: FUZZ_SEED, endOnFailure: true },
    );
    expect(await pairingProblems(h.db, known.conversationId)).toEqual([]);
    expect(unhandled.seen).toEqual([]);
    failures = 0;
  } finally {
    unhandled.stop();
    report("api-bodies", cases, failures, [...statuses].map(([s, n]) => `${s}: ${n}`).join(", "));
  }
});
