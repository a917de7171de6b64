import { execFile } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./db";
import { createHarness, type Harness } from "./runtime-harness";
import { dispatchCli, parseCli } from "@/lib/operator/cli";
import { AppError, toPublicError } from "@/lib/errors";

// The operator CLI, each invocation a fresh process: nothing may live only in memory between them.
const root = path.resolve(__dirname, "..");
let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  await tdb.drop();
});

interface CliResult {
  code: number;
  out: any;
  err: any;
}
function agent(...args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/agent.ts", ...args],
      {
        cwd: root,
        env: { ...process.env, DATABASE_URL: tdb.url, SUPPORT_DB_NAME: "", SUPPORT_SKIP_SEED: "1" },
        timeout: 60_000,
      },
      (error, stdout, stderr) => {
        const parse = (s: string) => {
          try {
            return JSON.parse(s.slice(s.indexOf("{")));
          } catch {
            return s;
          }
        };
        resolve({
          code: error ? ((error as { code?: number }).code ?? 1) : 0,
          out: stdout ? parse(stdout) : null,
          err: stderr ? parse(stderr) : null,
        });
      },
    );
  });
}

describe("npm run agent", () => {
  it("say → handoffs → decide → run → effects, across fresh processes", async () => {
    const said = await agent(
      "say",
      "--tenant",
      "acme",
      "--customer",
      "dana@example.com",
      "My order A-1002 arrived damaged, please refund it.",
    );
    expect(said.code).toBe(0);
    expect(said.out).toMatchObject({ phase: "WAITING_FOR_APPROVAL", conversationId: expect.any(String), runId: expect.any(String) });
    expect(said.out.replies[0].text).toMatch(/\$250\.00 refund for A-1002/);

    const listed = await agent("handoffs", "--tenant", "acme", "--status", "PENDING", "--kind", "approval");
    expect(listed.code).toBe(0);
    const ofConversation = await agent("handoffs", "--tenant", "acme", "--conversation", said.out.conversationId);
    expect(ofConversation.code).toBe(0);
    expect(ofConversation.out.handoffs.map((x: { id: string }) => x.id)).toEqual(listed.out.handoffs.map((x: { id: string }) => x.id));
    const ofNone = await agent("handoffs", "--tenant", "acme", "--conversation", "no-such-conversation");
    expect(ofNone.out).toEqual({ handoffs: [], nextCursor: null });
    const [handoff] = listed.out.handoffs;
    expect(handoff).toMatchObject({
      kind: "APPROVAL",
      status: "PENDING",
      version: 1,
      toolName: "refund_order",
      proposedInput: { amount_cents: 25000 },
      amount: "$250.00",
      customer: { email: "dana@example.com" },
    });
    for (const key of ["id", "runId", "summary", "rootCause", "recommendedAction", "reason"]) expect(handoff[key]).toBeTruthy();

    const stale = await agent("decide", handoff.id, "--as", "raj@acme.test", "--decision", "approve", "--version", "7");
    expect(stale.code).not.toBe(0);
    expect(stale.err.code).toBe("STALE_VERSION");

    const decided = await agent("decide", handoff.id, "--as", "raj@acme.test", "--decision", "approve", "--version", "1");
    expect(decided.code).toBe(0);
    expect(decided.out).toMatchObject({ phase: "COMPLETED", handoff: { status: "APPROVED" } });
    expect(decided.out.replies.map((r: { text: string }) => r.text).join(" ")).toMatch(/\$250\.00/);

    const again = await agent("decide", handoff.id, "--as", "raj@acme.test", "--decision", "approve");
    expect(again.err.code).toBe("ALREADY_DECIDED");

    const run = await agent("run", said.out.runId);
    expect(run.code).toBe(0);
    expect(run.out.messages[0].role).toBe("user");
    // The demo shop hands refunds to its returns specialist, whose refund is the one parked and approved.
    const names: string[] = run.out.toolCalls.map((c: { name: string }) => c.name);
    expect(names.filter((n) => n === "refund_order")).toHaveLength(1);
    expect(names.some((n) => n.endsWith("_specialist"))).toBe(true);
    expect(run.out.gateDecisions.length).toBeGreaterThan(0);
    expect(run.out.modelCalls.every((m: { stopReason: string }) => m.stopReason)).toBe(true);

    const effects = await agent("effects", "--tenant", "acme");
    expect(effects.out.effects).toHaveLength(1);
    expect((await agent("effects", "--tenant", "globex")).out.effects).toHaveLength(0);
  }, 240_000); // eight fresh processes in turn, each compiling the CLI: 23 s alone, past 120 s beside another suite

  it("bad input → JSON error with a stable code on stderr, non-zero exit, nothing written", async () => {
    const before = [await tdb.prisma.message.count(), await tdb.prisma.conversation.count(), await tdb.prisma.run.count()];
    // What the process does with an error: the command's code as JSON on stderr and a non-zero exit, whether the
    // arguments are refused (INVALID_INPUT) or the database has no such thing (NOT_FOUND).
    const cases: Array<[string[], string]> = [
      [["frobnicate"], "INVALID_INPUT"],
      [["say", "--tenant", "nope", "hi"], "NOT_FOUND"],
      [["decide", "nope", "--as", "raj@acme.test", "--decision", "edit", "--input", "{not json"], "INVALID_INPUT"],
    ];
    const results = await Promise.all(cases.map(([args]) => agent(...args)));
    results.forEach((r, i) => {
      expect(r.code, cases[i]![0].join(" ")).not.toBe(0);
      expect(r.err, cases[i]![0].join(" ")).toMatchObject({ code: cases[i]![1], message: expect.any(String) });
    });
    expect([await tdb.prisma.message.count(), await tdb.prisma.conversation.count(), await tdb.prisma.run.count()]).toEqual(before);
  }, 180_000);
});

// Every refusal the CLI makes, through the parsing and dispatch scripts/agent.ts runs (a fresh process each costs
// seconds of CPU; the test above holds what the process adds: the JSON on stderr and the exit code).
describe("the CLI's refusals", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => {
    await h.close();
  });
  const refusal = async (args: string[]) =>
    Promise.resolve()
      .then(() => dispatchCli(parseCli(args), h.deps))
      .then(
        (out) => ({ answered: out }),
        (err: unknown) => (err instanceof AppError ? toPublicError(err) : { crashed: String(err) }),
      );

  it.each<[string[], string]>([
    [["say", "--tenant", "acme", ""], "INVALID_INPUT"],
    [["say", "--tenant", "acme", "x".repeat(4001)], "INVALID_INPUT"],
    [["say", "--tenant", "nope", "hi"], "NOT_FOUND"],
    [["say", "--tenant", "acme", "--conversation", "not-a-conversation", "hi"], "NOT_FOUND"],
    [["say", "hi"], "INVALID_INPUT"],
    [["say", "--tenant", "acme", "--bogus", "hi"], "INVALID_INPUT"],
    [["say", "--tenant", "acme", "a\u0000b"], "INVALID_INPUT"],
    [["decide", "nope", "--as", "raj@acme.test", "--decision", "approve"], "NOT_FOUND"],
    [["decide", "nope", "--as", "raj@acme.test", "--decision", "edit", "--input", "{not json"], "INVALID_INPUT"],
    [["decide", "nope", "--as", "raj@acme.test", "--decision", "approve", "--version", "abc"], "INVALID_INPUT"],
    [["say", "--tenant", "acme", "--conversation", "", "hi"], "INVALID_INPUT"],
    [["handoffs", "--tenant", "acme", "--status", "WHATEVER"], "INVALID_INPUT"],
    [["handoffs", "--tenant", "acme", "--conversation", ""], "INVALID_INPUT"],
    [["handoffs", "--tenant", "acme", "--limit", "0"], "INVALID_INPUT"],
    [["effects", "--tenant", "acme", "--cursor", "not-a-cursor"], "INVALID_INPUT"],
    [["run", "missing-run"], "NOT_FOUND"],
    [["frobnicate"], "INVALID_INPUT"],
    [[], "INVALID_INPUT"],
  ])("%j → %s, nothing written", async (args, code) => {
    const before = [await h.db.message.count(), await h.db.conversation.count(), await h.db.run.count()];
    expect(await refusal(args)).toMatchObject({ code, message: expect.any(String) });
    expect([await h.db.message.count(), await h.db.conversation.count(), await h.db.run.count()]).toEqual(before);
  });
});
