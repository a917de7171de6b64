import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { tools } from "@/lib/tools/registry";
import { createHarness, type Harness } from "../runtime-harness";
import { anyText, FUZZ_SEED, pairingProblems, report, runs, watchUnhandled } from "./fuzz-support";

// Generated tool inputs through the runtime's own dispatch: the offline model proposes them (several per turn, as a
// model may), and the runtime validates them against each tool's input schema, gates and runs what passes. Every run
// ends in a defined phase, nothing throws out of the runtime, and every tool_use gets exactly one tool_result.
const TURNS = runs(150);
const PER_TURN = 8;

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h.close();
});

const ORDERS = ["A-1001", "A-1002", "A-1003", "A-1004", "A-9999", "B-1001", "a-1001", ""];
const EMAILS = ["dana@example.com", "sam@example.com", "DANA@EXAMPLE.COM", "nobody@example.com", "not an email"];
const scalar = fc.oneof(
  anyText,
  fc.constantFrom(...ORDERS, ...EMAILS),
  fc.integer(),
  fc.integer({ min: -100, max: 100_000 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
);
const FIELDS = [
  "order_number",
  "amount_cents",
  "reason",
  "email",
  "code",
  "postcode",
  "address",
  "line1",
  "city",
  "items",
  "question",
  "specialist",
  "summary",
  "priority",
  "customer_email",
  "new_address",
];
const toolName = fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...tools.map((t) => t.name)) }, { weight: 1, arbitrary: anyText });
const input = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.dictionary(
      fc.oneof(fc.constantFrom(...FIELDS), anyText),
      fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(fc.constantFrom(...FIELDS), scalar, { maxKeys: 4 })),
      { maxKeys: 5 },
    ),
  },
  { weight: 1, arbitrary: fc.anything({ maxDepth: 2 }) },
);
const turn = fc.array(fc.record({ name: toolName, input }), { minLength: 1, maxLength: PER_TURN });

const PHASES = ["RUNNING", "WAITING_FOR_APPROVAL", "WAITING_FOR_RETRY", "COMPLETED", "ESCALATED", "DEAD_LETTER"];

it(`${TURNS} model turns of generated tool inputs through the runtime's dispatch: pairing holds`, { timeout: 600_000 }, async () => {
  const unhandled = watchUnhandled();
  const phases = new Map<string, number>();
  let cases = 0;
  let inputs = 0;
  let failures = 1;
  try {
    await fc.assert(
      fc.asyncProperty(turn, fc.boolean(), async (uses, signedIn) => {
        cases++;
        inputs += uses.length;
        // What is left of the previous case's script (a parked run never asked for it) is dropped.
        while (h.script.take()) {}
        h.script.push(
          { reply: { content: uses.map((u) => ({ type: "tool_use", name: u.name, input: u.input })), stop_reason: "tool_use" } },
          { reply: { content: [{ type: "text", text: "Done checking." }], stop_reason: "end_turn" } },
        );
        const out = await h.say("please help with my order", signedIn ? { customer: "dana@example.com" } : {});
        const phase = out.phase ?? "none";
        phases.set(phase, (phases.get(phase) ?? 0) + 1);
        expect(PHASES).toContain(phase);
        expect(await pairingProblems(h.db, out.conversationId)).toEqual([]);
      }),
      { numRuns: TURNS, seed: FUZZ_SEED, endOnFailure: true },
    );
    expect(unhandled.seen).toEqual([]);
    failures = 0;
  } finally {
    unhandled.stop();
    report("tool-inputs", inputs, failures, `${cases} model turns; phases ${[...phases].map(([p, n]) => `${p}: ${n}`).join(", ")}`);
  }
});
