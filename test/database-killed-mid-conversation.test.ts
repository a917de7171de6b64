// The embedded PostgreSQL is killed (SIGKILL) in the middle of a customer's conversation — once while the
// runtime waits for the model's answer, once while the run is parked for approval — and the supervisor restarts
// it. The same PrismaClient (no process restart) then finishes the conversation: completed, one refund, every
// tool_use answered, no message lost or doubled. The server is this file's own (test/private-server.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPrisma, type PrismaClient } from "@/lib/db/client";
import { connectivityFailureKind, setDatabaseLogger } from "@/lib/db/outage";
import { createModelClient } from "@/lib/model/client";
import { createOfflineFetch, OfflineScript } from "@/lib/model/offline";
import { decide, say } from "@/lib/operator/commands";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { storeOf } from "@/lib/db/kysely";
import { buildModelMessages, loadTranscript, transcriptViolations } from "@/lib/store/transcript";
import { runWorkerOnce } from "@/lib/runtime/worker";
import { type PrivateServer, sleep, startPrivateServer } from "./private-server";

const LEASE_MS = 1_000;
const REFUND_A1002 = "Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.";

let pgs: PrivateServer;
let db: PrismaClient;
const logged: string[] = [];
let restoreLogger: ReturnType<typeof setDatabaseLogger>;

beforeAll(async () => {
  restoreLogger = setDatabaseLogger((_level, line) => logged.push(line));
  pgs = await startPrivateServer();
  db = createPrisma(pgs.url, { max: 4 });
}, 120_000);

afterAll(async () => {
  await db?.$disconnect();
  await pgs?.destroy();
  if (restoreLogger) setDatabaseLogger(restoreLogger);
});

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error("expected this to fail while the database was down");
    },
    (err: unknown) => err,
  );
}

describe("the database is killed mid-conversation", () => {
  it("the conversation completes after the supervisor restarts it, with nothing lost and nothing done twice", async () => {
    // The model's transport kills the database while the model "thinks" about its second answer of the run
    // (after the order lookup, before the refund proposal is recorded), and keeps it down until that answer
    // has reached the runtime — whose attempt to record it must then fail.
    const script = new OfflineScript();
    const offline = createOfflineFetch({ script });
    let requests = 0;
    let killDuring: number | null = 2;
    let releaseOutage: (() => void) | null = null;
    const outageOver = new Promise<void>((resolve) => (releaseOutage = resolve));
    let firstOutage: Promise<void> | null = null;
    const fetchKillingTheDatabase: typeof fetch = async (input, init) => {
      requests++;
      if (requests !== killDuring) return offline(input, init);
      killDuring = null;
      let answer!: Response;
      firstOutage = pgs.killAndHoldDown(async () => {
        answer = await offline(input, init);
        await outageOver; // released once the runtime has tried (and failed) to record the answer
      });
      while (!answer) await sleep(10);
      return answer;
    };
    const deps: RuntimeDeps = {
      db,
      model: createModelClient({ fetch: fetchKillingTheDatabase, maxRetries: 0, timeoutMs: 5000 }),
      workerId: "web-1",
      leaseMs: LEASE_MS,
    };

    // 1. The customer writes; the run dies with the database in the middle of its second model turn.
    const midTurn = await rejection(say(deps, { tenant: "acme", text: REFUND_A1002 }));
    expect(connectivityFailureKind(midTurn)).not.toBeNull();
    releaseOutage!();
    await firstOutage; // the supervisor restarted it and it answers
    expect(pgs.server.record()!.restarts).toBe(1);
    const deadPid = pgs.server.record()!.pid;

    // The customer's message was recorded before the outage; the run waits for a worker (its lease expires).
    const conversation = await db.conversation.findFirstOrThrow({ orderBy: { createdAt: "desc" } });
    const run = await db.run.findFirstOrThrow({ where: { conversationId: conversation.id } });
    expect(run.phase).toBe("RUNNING");

    // 2. A worker (this process, same pool) picks the run up once the lease expires: the refund parks.
    const worker = { ...deps, workerId: "worker-1" };
    await waitFor(async () => {
      await runWorkerOnce(worker);
      return (await db.run.findUniqueOrThrow({ where: { id: run.id } })).phase === "WAITING_FOR_APPROVAL";
    }, "the run to park for approval");
    const handoff = await db.handoff.findFirstOrThrow({ where: { runId: run.id, status: "PENDING" } });
    expect((await db.toolCall.findUniqueOrThrow({ where: { id: handoff.toolCallId! } })).name).toBe("refund_order");

    // 3. Killed again while parked: a reviewer's decision fails cleanly and changes nothing...
    const duringOutage = await pgs.killAndHoldDown(() =>
      rejection(decide(deps, { handoffId: handoff.id, staffEmail: "raj@acme.test", decision: "approve" })),
    );
    expect(connectivityFailureKind(duringOutage)).not.toBeNull();
    expect(pgs.server.record()!.restarts).toBe(2);
    expect(pgs.server.record()!.pid).not.toBe(deadPid);
    expect((await db.handoff.findUniqueOrThrow({ where: { id: handoff.id } })).status).toBe("PENDING");

    // ...and after the restart the same decision, by the same client, resumes the run to its end.
    const decided = await decide(deps, {
      handoffId: handoff.id,
      staffEmail: "raj@acme.test",
      decision: "approve",
      version: handoff.version,
    });
    expect(decided.outcome).toBe("approved");
    expect(decided.phase).toBe("COMPLETED");
    expect(decided.replies.map((r) => r.text).join(" ")).toMatch(/\$250\.00/);

    // Completed, exactly one effect, every tool_use answered, the customer's message once, one final reply.
    expect((await db.run.findUniqueOrThrow({ where: { id: run.id } })).phase).toBe("COMPLETED");
    const effects = await db.effectLedger.findMany();
    expect(effects.map((e) => e.toolName)).toEqual(["refund_order"]);
    const refunds = await db.refund.findMany();
    expect(refunds.map((r) => r.amountCents)).toEqual([25000]);
    expect((await db.order.findFirstOrThrow({ where: { number: "A-1002" } })).refundedCents).toBe(25000);
    expect(transcriptViolations(buildModelMessages(await loadTranscript(storeOf(db), conversation.id)))).toEqual([]);
    const messages = await db.message.findMany({ where: { conversationId: conversation.id }, orderBy: { seq: "asc" } });
    expect(messages.filter((m) => m.author === "CUSTOMER").map((m) => JSON.stringify(m.content))).toEqual([
      expect.stringContaining("A-1002 arrived damaged"),
    ]);
    expect(messages.map((m) => m.seq)).toEqual(messages.map((_, i) => i + 1)); // no gap, no duplicate
    expect(messages.filter((m) => m.author === "AGENT" && m.shownToCustomer).length).toBeGreaterThanOrEqual(1);
    const calls = await db.toolCall.findMany({ where: { runId: run.id }, orderBy: [{ messageSeq: "asc" }, { position: "asc" }] });
    expect(calls.map((c) => `${c.name}:${c.status}`)).toEqual(expect.arrayContaining(["refund_order:SUCCEEDED"]));
    expect(calls.filter((c) => c.name === "refund_order")).toHaveLength(1);

    // The supervisor said what it did, once per restart.
    expect(logged.filter((l) => /embedded PostgreSQL .*was down; restarted/.test(l))).toHaveLength(2);
  }, 120_000);
});

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      if (!connectivityFailureKind(err)) throw err; // still coming back: try again
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}
