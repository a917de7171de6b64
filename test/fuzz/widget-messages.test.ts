import fc from "fast-check";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { DEMO_POLICY_RULES } from "@/lib/setup/seed";
import type { PolicyRulesInput } from "@/lib/policy/policy";
import { afterCallbacks, runAfterCallbacks, type WidgetRoutes, widgetRoutes } from "../widget-routes";
import { anyText, FUZZ_SEED, pairingProblems, report, runs, watchUnhandled } from "./fuzz-support";

vi.mock("next/server", async (original) => ({
  ...(await original<typeof import("next/server")>()),
  after: (fn: () => unknown) => afterCallbacks.push(fn),
}));

// Generated widget messages POSTed to the real route handler (app/api/widget/[shop]/messages), each followed by the
// run it starts (the offline model, in process): never a 5xx, never an unhandled rejection, a customer message stored
// exactly when the answer is 202, and the transcript's pairing contract intact after every case.
const CASES = runs(1500);
const CONVERSATIONS = 12;
const RUN_EVERY = 40;

let w: WidgetRoutes;
let tokens: Array<{ token: string; conversationId: string }>;
beforeAll(async () => {
  w = await widgetRoutes();
  // The fuzz is about what the handler does with a body, not about the rate limits (test/widget/rate-limits.test.ts).
  const db = w.tdb.prisma;
  const tenant = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  const rules = structuredClone(DEMO_POLICY_RULES) as unknown as PolicyRulesInput;
  rules.limits = {
    messagesPerMinutePerConversation: 1e6,
    messagesPerMinutePerIp: 1e6,
    messagesPerMinutePerShop: 1e6,
    conversationsPerHourPerIp: 1e6,
  };
  await db.policyVersion.create({ data: { tenantId: tenant.id, version: tenant.policyVersion + 500, rules: rules as object } });
  await db.tenant.update({ where: { id: tenant.id }, data: { policyVersion: tenant.policyVersion + 500 } });
  tokens = [];
  for (let i = 0; i < CONVERSATIONS; i++) {
    const { body } = await w.start({ ip: `203.0.113.${i}` });
    tokens.push({ token: body.token, conversationId: body.view.conversationId });
  }
});
afterAll(async () => {
  await runAfterCallbacks();
  await w.close();
});

type Body = { kind: "json"; raw: string } | { kind: "bytes"; bytes: Uint8Array } | { kind: "chunked"; bytes: number };

const body: fc.Arbitrary<Body> = fc.oneof(
  { weight: 6, arbitrary: anyText.map((text) => ({ kind: "json" as const, raw: JSON.stringify({ text }) })) },
  { weight: 2, arbitrary: fc.anything({ maxDepth: 2 }).map((v) => ({ kind: "json" as const, raw: JSON.stringify({ text: v }) ?? "" })) },
  { weight: 1, arbitrary: fc.json({ maxDepth: 2 }).map((raw) => ({ kind: "json" as const, raw })) },
  { weight: 1, arbitrary: anyText.map((raw) => ({ kind: "json" as const, raw })) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((bytes) => ({ kind: "bytes" as const, bytes })) },
  { weight: 1, arbitrary: fc.integer({ min: 32_000, max: 34_000 }).map((bytes) => ({ kind: "chunked" as const, bytes })) },
);
const contentType = fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", "", "application/jsonx");

function streamOf(bytes: number): ReadableStream<Uint8Array> {
  const piece = new TextEncoder().encode(`{"text":"${"z".repeat(1000)}`);
  let sent = 0;
  return new ReadableStream({
    pull(c) {
      if (sent >= bytes) return c.close();
      sent += piece.byteLength;
      c.enqueue(piece);
    },
  });
}

it(`${CASES} generated widget messages: no 5xx, nothing half-written, pairing holds`, { timeout: 600_000 }, async () => {
  const unhandled = watchUnhandled();
  const statuses = new Map<number, number>();
  let cases = 0;
  let failures = 1;
  try {
    await fc.assert(
      fc.asyncProperty(fc.nat(CONVERSATIONS - 1), body, contentType, async (which, b, type) => {
        cases++;
        const { token, conversationId } = tokens[which]!;
        const before = await w.tdb.prisma.message.count({ where: { conversationId, author: "CUSTOMER" } });
        const raw = b.kind === "json" ? b.raw : b.kind === "bytes" ? b.bytes : streamOf(b.bytes);
        const res = await w.send(token, raw, { raw: true, ip: "203.0.113.200", headers: type ? { "content-type": type } : {} });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
        expect([202, 400, 413]).toContain(res.status);
        expect(typeof res.body.message === "string" || res.status === 202).toBe(true);
        // The runs the accepted messages started are advanced every few cases (between them, messages queue behind
        // a run not yet advanced, as they do while the agent is answering).
        if (cases % RUN_EVERY === 0) await runAfterCallbacks();
        const after = await w.tdb.prisma.message.count({ where: { conversationId, author: "CUSTOMER" } });
        expect(after - before, `stored iff accepted (status ${res.status})`).toBe(res.status === 202 ? 1 : 0);
        expect(await pairingProblems(w.tdb.prisma, conversationId)).toEqual([]);
      }),
      { numRuns: CASES, seed: FUZZ_SEED, endOnFailure: true },
    );
    await runAfterCallbacks();
    for (const t of tokens) expect(await pairingProblems(w.tdb.prisma, t.conversationId)).toEqual([]);
    expect(unhandled.seen).toEqual([]);
    failures = 0;
  } finally {
    unhandled.stop();
    report("widget-messages", cases, failures, [...statuses].map(([s, n]) => `${s}: ${n}`).join(", "));
  }
});
