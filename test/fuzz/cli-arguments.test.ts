import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { AppError } from "@/lib/errors";
import { dispatchCli, parseCli } from "@/lib/operator/cli";
import { createHarness, type Harness } from "../runtime-harness";
import { anyText, FUZZ_SEED, pairingProblems, report, runs, watchUnhandled } from "./fuzz-support";

// Generated argument lists for the operator CLI (lib/operator/cli: parse, then dispatch on a runtime, in process):
// every answer is a result or an AppError with a code the caller can act on — never INTERNAL, never an unhandled
// rejection — and every conversation a `say` touched keeps its transcript's pairing contract.
const CASES = runs(5500);

let h: Harness;
let known: { handoffId: string; runId: string; conversationId: string };
beforeAll(async () => {
  h = await createHarness();
  // Something real for the arguments to point at: a parked refund with its handoff, run and conversation.
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

const COMMANDS = ["say", "handoffs", "decide", "run", "effects", "token", "worker", "", "nope", "SAY", "--tenant"];
const OPTIONS = [
  "--tenant",
  "--conversation",
  "--customer",
  "--status",
  "--kind",
  "--as",
  "--decision",
  "--input",
  "--reason",
  "--version",
  "--once",
  "--name",
  "--scopes",
  "--limit",
  "--cursor",
  "--unknown",
  "-x",
  "--",
];

const value = () =>
  fc.oneof(
    anyText,
    fc.constantFrom(
      "acme",
      "globex",
      "dana@example.com",
      "raj@acme.test",
      "approve",
      "deny",
      "edit",
      "PENDING",
      "approval",
      "create",
      "list",
      "revoke",
      "handoffs:read,handoffs:decide",
      "handoffs:everything",
      '{"amount_cents":100}',
      "{not json",
      "1",
      "-1",
      "1e999",
      "NaN",
      "0",
      "500",
      "501",
      // cursors: a well-formed one, one past PostgreSQL's years, one whose id is not an id
      Buffer.from("2026-01-01T00:00:00.000Z|abc", "utf8").toString("base64url"),
      Buffer.from("+010000-01-01T00:00:00.000Z|abc", "utf8").toString("base64url"),
      Buffer.from("2026-01-01T00:00:00.000Z|a'b", "utf8").toString("base64url"),
    ),
    fc.constant("@handoff"),
    fc.constant("@run"),
    fc.constant("@conversation"),
  );

const argv = fc
  .tuple(fc.constantFrom(...COMMANDS), fc.array(fc.oneof(fc.constantFrom(...OPTIONS), value()), { maxLength: 8 }))
  .map(([command, rest]) =>
    [command, ...rest].map((a) =>
      a === "@handoff" ? known.handoffId : a === "@run" ? known.runId : a === "@conversation" ? known.conversationId : a,
    ),
  );

it(`${CASES} generated CLI argument lists: results or clear errors, never INTERNAL`, { timeout: 600_000 }, async () => {
  const unhandled = watchUnhandled();
  const outcomes = { ok: 0, refused: 0 };
  let cases = 0;
  let failures = 1;
  try {
    await fc.assert(
      fc.asyncProperty(argv, async (args) => {
        cases++;
        // The model answers whatever a `say` sends (the offline model's own understanding) — queue nothing scripted.
        h.script.requests.length = 0;
        try {
          const cli = parseCli(args);
          // `worker` without --once serves until stopped: stopped at once here.
          const stop = new AbortController();
          if (cli.command === "worker" && !cli.values.once) stop.abort();
          const out = (await dispatchCli(cli, h.deps, stop.signal)) as { conversationId?: string } | undefined;
          outcomes.ok++;
          if (out?.conversationId) expect(await pairingProblems(h.db, out.conversationId)).toEqual([]);
        } catch (err) {
          if (!(err instanceof AppError) || err.code === "INTERNAL") throw err;
          outcomes.refused++;
        }
      }),
      { numRuns: CASES, seed: FUZZ_SEED, endOnFailure: true },
    );
    expect(await pairingProblems(h.db, known.conversationId)).toEqual([]);
    expect(unhandled.seen).toEqual([]);
    failures = 0;
  } finally {
    unhandled.stop();
    report("cli-arguments", cases, failures, `${outcomes.ok} ran, ${outcomes.refused} refused with a clear code`);
  }
});
