// The worker's pass and loop (lib/runtime/worker.ts) and what an advance does when a step fails: a claim is a fresh
// lease identity (the worker's own earlier advance of a run it takes over is fenced off), a saturated worker waits
// for a free slot instead of polling, and a step that fails every time backs off and ends as a dead letter instead
// of asking the model again in a tight loop.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createHarness, type Harness, roundTripsDuring } from "../runtime-harness";
import type { HookSlot } from "../hook-after";
import { captureLogLines } from "../log-lines";
import { openConversation, receiveCustomerMessage } from "@/lib/conversations/intake";
import { runWorker, runWorkerOnce } from "@/lib/runtime/worker";
import { expireDueApprovals, expiryRetries } from "@/lib/runtime/resume";
import { stopListeners } from "@/lib/db/listener";
import { storeOf } from "@/lib/db/kysely";
import { nextDueAt } from "@/lib/store/runs";
import type { ModelClient } from "@/lib/model/types";
import { refuseWrites } from "../refused-writes";

// What the worker reads to decide how long to sleep, with a hook that runs right after the read (see the wake-up test).
const afterDueRead = vi.hoisted((): HookSlot => ({ hook: null }));
vi.mock("@/lib/store/runs", async (importOriginal) => {
  const real = await importOriginal<typeof import("@/lib/store/runs")>();
  const { hookAfter } = await import("../hook-after");
  return { ...real, nextDueAt: hookAfter(real.nextDueAt, afterDueRead) };
});

// The transcript's read, made to fail once when a test asks (see the claimed-run test).
const transcriptRead = vi.hoisted(() => ({ failOnce: false }));
vi.mock("@/lib/store/transcript", async (importOriginal) => {
  const real = await importOriginal<typeof import("@/lib/store/transcript")>();
  return {
    ...real,
    loadTranscript: async (...args: Parameters<typeof real.loadTranscript>) => {
      if (transcriptRead.failOnce) {
        transcriptRead.failOnce = false;
        throw new Error("the transcript could not be read (for the test)");
      }
      return real.loadTranscript(...args);
    },
  };
});

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await stopListeners();
  await h.close();
});

/** A run left for the worker (no caller lease). */
async function startRun(text: string) {
  const dana = await h.db.customer.findFirstOrThrow({ where: { email: "dana@example.com" } });
  const { conversation } = await openConversation(h.db, { tenantId: h.acme.id, customerId: dana.id });
  const intake = await receiveCustomerMessage(h.db, { tenantId: h.acme.id, conversationId: conversation.id, text, model: "m" });
  if (intake.kind !== "started") throw new Error("expected a run");
  return { runId: intake.runId, conversationId: conversation.id };
}

/** The harness's model with every request held until the test releases it (by its 1-based number). */
function heldModel(inner: ModelClient) {
  const gates = new Map<number, () => void>();
  let started = 0;
  let open = false;
  const model: ModelClient = {
    ...inner,
    countTokens: (req) => inner.countTokens(req),
    async send(req, opts) {
      const n = ++started;
      if (!open) await new Promise<void>((r) => gates.set(n, r));
      const res = await inner.send(req, opts);
      // A real model names each tool_use afresh in every response (the offline one derives the id from the request).
      const content = res.message.content.map((b) => (b.type === "tool_use" ? { ...b, id: `${b.id}_${n}` } : b));
      return { ...res, message: { ...res.message, content } };
    },
  };
  return {
    model,
    started: () => started,
    release: (n: number) => gates.get(n)?.(),
    releaseAll: () => {
      open = true;
      for (const r of gates.values()) r();
    },
  };
}

async function until(cond: () => boolean | Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a claim is a lease identity of its own", () => {
  it("a run the same worker takes over after its lease ran out fences off its earlier advance", async () => {
    const { runId, conversationId } = await startRun("Where is my order A-1001?");
    const held = heldModel(h.deps.model);
    const worker = h.newDeps("worker-1", held.model);

    // Pass 1 claims the run and is inside its model call (request #1).
    const first = runWorkerOnce(worker, 1);
    await until(() => held.started() === 1);
    // Its heartbeat did not land for a lease's length (a database stall): the lease ran out.
    await h.db.$executeRawUnsafe(`UPDATE "Run" SET "leaseExpiresAt" = now() - interval '1 second' WHERE id = $1`, runId);
    // The same worker's next pass takes the run over, as it should (it is due): request #2.
    const second = runWorkerOnce(worker, 1);
    await until(() => held.started() === 2);

    // The taken-over advance's model answers first: its turn is a fenced write, refused (it ends), or — were it to
    // pass the fence — written, and the advance would go on to its next request.
    held.release(1);
    let firstSettled = false;
    void first.finally(() => (firstSettled = true));
    await until(() => firstSettled || held.started() >= 3);
    // Then the advance that holds the lease gets its answer and writes its turn (and sends its next request) before
    // anything else moves — were the first still going, its next request would be #3, held.
    const taken = firstSettled;
    held.release(2);
    await until(() => held.started() >= (taken ? 3 : 4));
    held.releaseAll();
    await Promise.allSettled([first, second]);
    // Finished by the advance that held the lease, with no step of it refused on the way.
    expect(await h.db.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ phase: "COMPLETED", requestAttempts: 0 });

    const calls = await h.db.modelCall.findMany({ where: { runId }, select: { turn: true } });
    const turns = calls.map((c) => c.turn).sort();
    // One advance held the run: each turn answered once, the tool_use/tool_result pairing kept.
    expect(turns).toEqual([...new Set(turns)]);
    expect(await h.transcriptProblems(conversationId)).toEqual([]);
  });
});

describe("a worker whose slots are all busy", () => {
  it("waits for a free slot instead of asking the database what is due every 20 ms, then takes the waiting run", async () => {
    const a = await startRun("Where is my order A-1001?");
    const b = await startRun("Where is my order A-1002?");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let requests = 0;
    const inner = h.deps.model;
    const model: ModelClient = {
      ...inner,
      countTokens: (req) => inner.countTokens(req),
      async send(req, opts) {
        requests++;
        await gate; // the run in the worker's one slot is in a long model call
        return inner.send(req, opts);
      },
    };
    const stop = new AbortController();
    let worker!: Promise<void>;
    const sent = await roundTripsDuring(async () => {
      worker = runWorker(
        { ...h.newDeps("worker-1", model), databaseUrl: h.tdb.url },
        { signal: stop.signal, intervalMs: 5000, concurrency: 1 },
      );
      await new Promise((r) => setTimeout(r, 2000));
    });
    expect(requests).toBe(1); // one slot: one run in flight, the other due and waiting
    const polls = sent.filter((s) => /least\(\s*\(SELECT min\("nextAttemptAt"\)/.test(s.text)).length;
    const claims = sent.filter((s) => /FOR UPDATE SKIP LOCKED/.test(s.text)).length;
    expect(claims, "the worker claimed at all").toBeGreaterThan(0); // the statements are recognised
    // With a 5 s poll interval and a wake-up when the slot frees: a query or two, not one every 20 ms.
    expect(polls, "what-is-due queries in 2 s while saturated").toBeLessThanOrEqual(2);

    // The slot frees: the waiting run is taken at once (the ended advance wakes the loop), not after the poll interval.
    const freedAt = Date.now();
    release();
    await until(async () => (await h.db.run.count({ where: { id: { in: [a.runId, b.runId] }, phase: "COMPLETED" } })) === 2, 4000);
    expect(Date.now() - freedAt).toBeLessThan(4000);
    stop.abort();
    await worker;
  });
});

describe("a wake-up", () => {
  it("that arrives between reading what is due and going to sleep is not lost (no wait for the poll interval)", async () => {
    let runId = "";
    // The worker reads that nothing is due; right after, before it sleeps, a run becomes due and its NOTIFY arrives.
    afterDueRead.hook = async () => {
      runId = (await startRun("Where is my order A-1001?")).runId;
      await new Promise((r) => setTimeout(r, 300));
    };
    const stop = new AbortController();
    const worker = runWorker({ ...h.newDeps("worker-1"), databaseUrl: h.tdb.url }, { signal: stop.signal, intervalMs: 10_000 });
    try {
      await until(async () => runId !== "" && (await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase === "COMPLETED", 5000);
    } finally {
      stop.abort();
      await worker;
    }
  });
});

describe("a claimed run whose first read fails", () => {
  it("is not held until its lease runs out: it waits for a retry with backoff, and is then finished", async () => {
    process.env.SUPPORT_RETRY_BASE_MS = "50";
    try {
      const { runId } = await startRun("Where is my order A-1001?");
      transcriptRead.failOnce = true;
      await runWorkerOnce(h.deps);
      const waiting = await h.db.run.findUniqueOrThrow({ where: { id: runId } });
      expect(waiting).toMatchObject({ phase: "WAITING_FOR_RETRY", leaseOwner: null, requestAttempts: 1 });
      await new Promise((r) => setTimeout(r, 200));
      await runWorkerOnce(h.deps);
      expect((await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase).toBe("COMPLETED");
    } finally {
      delete process.env.SUPPORT_RETRY_BASE_MS;
    }
  });
});

describe("a retry", () => {
  it("a run that starts waiting for a retry wakes a sleeping worker to set its timer: taken when due, not at the poll interval", async () => {
    process.env.SUPPORT_RETRY_BASE_MS = "200";
    const stop = new AbortController();
    // Nothing is due: the worker goes to sleep for its whole poll interval (10 s).
    const worker = runWorker({ ...h.newDeps("worker-1"), databaseUrl: h.tdb.url }, { signal: stop.signal, intervalMs: 10_000 });
    try {
      await new Promise((r) => setTimeout(r, 500));
      // The model is overloaded once: the run, advanced by the request that took the message, waits ~200 ms to retry.
      h.script.push({ http: 529 }, { reply: { content: [{ type: "text", text: "A-1001 was delivered." }], stop_reason: "end_turn" } });
      const out = await h.say("Where is my order A-1001?", { customer: "dana@example.com" });
      expect(out.phase).toBe("WAITING_FOR_RETRY");
      await until(async () => (await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase === "COMPLETED", 3000);
    } finally {
      stop.abort();
      await worker;
      delete process.env.SUPPORT_RETRY_BASE_MS;
    }
  });
});

describe("stopping", () => {
  it("lets the runs in flight finish before it returns, and claims nothing more", async () => {
    const { runId } = await startRun("Where is my order A-1001?");
    const held = heldModel(h.deps.model);
    const stop = new AbortController();
    const worker = runWorker({ ...h.newDeps("worker-1", held.model), databaseUrl: h.tdb.url }, { signal: stop.signal, intervalMs: 5000 });
    await until(() => held.started() === 1);
    stop.abort();
    const later = await startRun("Where is my order A-1002?"); // due after the stop: left for another worker
    let returned = false;
    void worker.then(() => (returned = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(returned).toBe(false); // still draining: its run is in a model call
    held.releaseAll();
    await worker;
    expect(await h.db.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({ phase: "COMPLETED" });
    expect(await h.db.run.findUniqueOrThrow({ where: { id: later.runId } })).toMatchObject({ phase: "RUNNING", leaseOwner: null });
  });

  it("for drainMs at most: a run still going then keeps its lease, for another worker once it runs out", async () => {
    const { runId } = await startRun("Where is my order A-1001?");
    const held = heldModel(h.deps.model);
    const stop = new AbortController();
    const worker = runWorker(
      { ...h.newDeps("worker-1", held.model), databaseUrl: h.tdb.url },
      { signal: stop.signal, intervalMs: 5000, drainMs: 200 },
    );
    await until(() => held.started() === 1);
    const stoppedAt = Date.now();
    stop.abort();
    await worker;
    expect(Date.now() - stoppedAt).toBeLessThan(2000);
    const run = await h.db.run.findUniqueOrThrow({ where: { id: runId } });
    expect(run.phase).toBe("RUNNING");
    expect(run.leaseOwner).not.toBeNull();
    held.releaseAll();
    await until(async () => (await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase === "COMPLETED");
  });
});

describe("a run whose step fails every time", () => {
  /** Refuses this run's model turns in the test's database: stands for any failure of a step that repeats. */
  async function refuseModelCallsOf(runId: string) {
    await h.db.$executeRawUnsafe(`
      CREATE FUNCTION refuse_for_test() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW."runId" = '${runId}' THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$`);
    await h.db.$executeRawUnsafe(
      `CREATE TRIGGER refuse_for_test BEFORE INSERT ON "ModelCall" FOR EACH ROW EXECUTE FUNCTION refuse_for_test()`,
    );
  }
  function countingModel() {
    const inner = h.deps.model;
    const counter = { requests: 0 };
    const model: ModelClient = {
      ...inner,
      countTokens: (req) => inner.countTokens(req),
      send: (req, opts) => {
        counter.requests++;
        return inner.send(req, opts);
      },
    };
    return { model, counter };
  }

  it("waits and is tried again with backoff, not claimed straight back (the model asked again in a tight loop)", async () => {
    const { runId } = await startRun("Where is my order A-1001?");
    await refuseModelCallsOf(runId);
    const { model, counter } = countingModel();
    const stop = new AbortController();
    const worker = runWorker({ ...h.newDeps("worker-1", model), databaseUrl: h.tdb.url }, { signal: stop.signal, intervalMs: 5000 });
    await new Promise((r) => setTimeout(r, 3000));
    stop.abort();
    await worker;
    const run = await h.db.run.findUniqueOrThrow({ where: { id: runId } });
    // Backoff from 1–2 s (SUPPORT_RETRY_BASE_MS 2 s): one or two tries in 3 s, not a hundred. A try asks the model
    // twice: the lookup's turn commits while the next request is already on its way (and is then refused).
    expect(run.requestAttempts).toBeGreaterThanOrEqual(1);
    expect(run.requestAttempts).toBeLessThanOrEqual(2);
    expect(counter.requests).toBeLessThanOrEqual(2 * run.requestAttempts);
    expect(run).toMatchObject({ phase: "WAITING_FOR_RETRY", leaseOwner: null });
  });

  it("past the policy's attempt budget it ends as a dead letter a person sees, and the customer is told", async () => {
    const before = process.env.SUPPORT_RETRY_BASE_MS;
    process.env.SUPPORT_RETRY_BASE_MS = "20";
    try {
      const { runId, conversationId } = await startRun("Where is my order A-1001?");
      await refuseModelCallsOf(runId);
      const { model, counter } = countingModel();
      const stop = new AbortController();
      const worker = runWorker({ ...h.newDeps("worker-1", model), databaseUrl: h.tdb.url }, { signal: stop.signal, intervalMs: 200 });
      await until(async () => (await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase === "DEAD_LETTER", 15_000);
      stop.abort();
      await worker;
      const run = await h.db.run.findUniqueOrThrow({ where: { id: runId } });
      const policy = await h.db.policyVersion.findFirstOrThrow({ where: { tenantId: h.acme.id, version: run.policyVersion } });
      const budget = (policy.rules as { budgets: { maxRequestAttempts: number } }).budgets.maxRequestAttempts;
      expect(run.requestAttempts).toBe(budget);
      expect(counter.requests).toBeLessThanOrEqual(2 * budget); // see above: a try asks twice at most
      expect(run.outcome).toMatch(/failed \d+ time/);
      const handoff = await h.db.handoff.findFirstOrThrow({ where: { runId, kind: "ESCALATION" } });
      expect(handoff.status).toBe("PENDING");
      const told = await h.db.message.findFirstOrThrow({ where: { conversationId, author: "HARNESS", shownToCustomer: true } });
      expect(told.displayText).toMatch(/person/);
    } finally {
      if (before === undefined) delete process.env.SUPPORT_RETRY_BASE_MS;
      else process.env.SUPPORT_RETRY_BASE_MS = before;
    }
  });

  it("a connection failure is not the run's fault: it is let go at once for whoever reaches the database, nothing counted", async () => {
    const { runId } = await startRun("Where is my order A-1001?");
    // The step's statement fails as a lost connection would (SQLSTATE class 08).
    await h.db.$executeRawUnsafe(`
      CREATE FUNCTION refuse_for_test() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW."runId" = '${runId}' THEN RAISE EXCEPTION 'connection failure for the test' USING ERRCODE = '08006'; END IF; RETURN NEW; END $$`);
    await h.db.$executeRawUnsafe(
      `CREATE TRIGGER refuse_for_test BEFORE INSERT ON "ModelCall" FOR EACH ROW EXECUTE FUNCTION refuse_for_test()`,
    );
    const pass = await runWorkerOnce(h.newDeps("worker-1"), 1);
    expect(pass.advanced).toBe(1);
    expect(await h.db.run.findUniqueOrThrow({ where: { id: runId } })).toMatchObject({
      phase: "RUNNING",
      leaseOwner: null,
      requestAttempts: 0,
    });
  });
});

describe("a worker at rest", () => {
  it("asks the database nothing while nothing is due: it wakes on notifications, not on a poll", async () => {
    const stop = new AbortController();
    // Polls 200 ms apart without notifications; listening, a minute at rest is a safety net only.
    const worker = runWorker(
      { ...h.newDeps("worker-1"), databaseUrl: h.tdb.url },
      { signal: stop.signal, intervalMs: 200, idleMs: 60_000 },
    );
    try {
      await new Promise((r) => setTimeout(r, 1000)); // listening, the seed's audit records sealed, the first passes done
      const sent = await roundTripsDuring(() => new Promise((r) => setTimeout(r, 1500)));
      // Before: expire, claim and "what is due" every 200 ms.
      expect(sent.map((s) => s.text)).toEqual([]);
      // A message still gets its answer at once.
      const { runId } = await startRun("Where is my order A-1001?");
      await until(async () => (await h.db.run.findUniqueOrThrow({ where: { id: runId } })).phase === "COMPLETED", 3000);
    } finally {
      stop.abort();
      await worker;
    }
  });

  it("expires an approval when its time comes, though the approval was parked while the worker slept", async () => {
    await h.publish((r) => ({ ...r, approvalTtlHours: 2 / 3600 })); // two seconds
    const stop = new AbortController();
    const worker = runWorker(
      { ...h.newDeps("worker-1"), databaseUrl: h.tdb.url },
      { signal: stop.signal, intervalMs: 200, idleMs: 60_000 },
    );
    try {
      await new Promise((r) => setTimeout(r, 1000)); // asleep
      const out = await h.say("Hi, I'm dana@example.com. My order A-1002 arrived damaged, please refund it.");
      expect(out.phase).toBe("WAITING_FOR_APPROVAL");
      const handoff = await h.db.handoff.findUniqueOrThrow({ where: { id: out.handoffs[0]!.id } });
      await until(async () => (await h.db.handoff.findUniqueOrThrow({ where: { id: handoff.id } })).status === "EXPIRED", 5000);
      const late = Date.now() - handoff.expiresAt!.getTime();
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThan(1500);
      await until(async () => (await h.db.run.findUniqueOrThrow({ where: { id: out.runId! } })).phase === "COMPLETED", 3000);
    } finally {
      stop.abort();
      await worker;
    }
  });
});

describe("expiring approvals", () => {
  it("does not hold the worker while the expired runs go on: they are advanced in its slots, side by side", async () => {
    const parked: Array<{ runId: string; handoffId: string }> = [];
    for (const order of ["A-1002", "A-1004"]) {
      const out = await h.say(`Hi, I'm dana@example.com. My order ${order} arrived damaged, please refund it.`);
      expect(out.phase).toBe("WAITING_FOR_APPROVAL");
      parked.push({ runId: out.runId!, handoffId: out.handoffs[0]!.id });
    }
    await h.db.handoff.updateMany({
      where: { id: { in: parked.map((p) => p.handoffId) } },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    const held = heldModel(h.deps.model); // every model request waits until the test lets it go
    const stop = new AbortController();
    const worker = runWorker(
      { ...h.newDeps("worker-1", held.model), databaseUrl: h.tdb.url },
      { signal: stop.signal, intervalMs: 200, concurrency: 4 },
    );
    try {
      // Both expire and both runs ask the model at once — before, the pass waited for the first run to finish (its
      // model call held) before it expired the second.
      await until(() => held.started() === 2, 5000);
      const statuses = await h.db.handoff.findMany({ where: { id: { in: parked.map((p) => p.handoffId) } }, select: { status: true } });
      expect(statuses.map((s) => s.status)).toEqual(["EXPIRED", "EXPIRED"]);
      // And a message that comes meanwhile is taken too.
      const { runId } = await startRun("Where is my order A-1001?");
      await until(() => held.started() === 3, 5000);
      held.releaseAll();
      const runIds = [...parked.map((p) => p.runId), runId];
      await until(async () => (await h.db.run.count({ where: { id: { in: runIds }, phase: "COMPLETED" } })) === 3, 10_000);
      const calls = await h.db.toolCall.findMany({ where: { runId: { in: parked.map((p) => p.runId) }, name: "refund_order" } });
      expect(calls.map((c) => c.status)).toEqual(["EXPIRED", "EXPIRED"]);
      expect(await h.effects()).toHaveLength(0);
    } finally {
      held.releaseAll();
      stop.abort();
      await worker;
    }
  });
});

describe("an approval whose expiry fails", () => {
  /** Two approvals past their time; the first (the older) cannot be written: a trigger refuses any change to its row,
   * as a row a bug or a later constraint left unwritable would, and counts the attempts (a sequence: not rolled back). */
  async function aPoisonedApprovalAndAGoodOne() {
    const parked: Array<{ runId: string; handoffId: string }> = [];
    for (const order of ["A-1002", "A-1004"]) {
      const out = await h.say(`Hi, I'm dana@example.com. My order ${order} arrived damaged, please refund it.`);
      expect(out.phase).toBe("WAITING_FOR_APPROVAL");
      parked.push({ runId: out.runId!, handoffId: out.handoffs[0]!.id });
    }
    const [poisoned, good] = parked as [(typeof parked)[0], (typeof parked)[0]];
    await h.db.handoff.update({ where: { id: poisoned.handoffId }, data: { expiresAt: new Date(Date.now() - 2000) } });
    await h.db.handoff.update({ where: { id: good.handoffId }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const refused = await refuseWrites(h.db, {
      name: "poison",
      op: "UPDATE",
      table: "Handoff",
      when: `OLD.id = '${poisoned.handoffId}'`,
      message: "this handoff cannot be written (for the test)",
    });
    const attempts = refused.tries;
    return { poisoned, good, attempts };
  }

  const logLines = captureLogLines();
  // The backoff is the process's: an earlier test's refused approval (of another database) would wake a worker here.
  beforeEach(() => {
    for (const id of expiryRetries.waiting()) expiryRetries.settled(id);
  });

  it("does not keep the others from expiring, and is not tried again at once", async () => {
    const { poisoned, good, attempts } = await aPoisonedApprovalAndAGoodOne();
    expect(await expireDueApprovals(h.deps)).toEqual([good.handoffId]);
    expect(await expireDueApprovals(h.deps)).toEqual([]);
    expect(await attempts()).toBe(1); // the second pass left it alone: it waits for its retry
    // Nor does a sleeping worker set its timer by it: what is due leaves it out until its retry.
    const store = storeOf(h.db);
    expect((await nextDueAt(store)).approvalExpiry).not.toBeNull();
    expect((await nextDueAt(store, { skipApprovals: [poisoned.handoffId] })).approvalExpiry).toBeNull();
    expect((await h.db.handoff.findUniqueOrThrow({ where: { id: poisoned.handoffId } })).status).toBe("PENDING");
    expect((await h.db.handoff.findUniqueOrThrow({ where: { id: good.handoffId } })).status).toBe("EXPIRED");
    const failure = logLines().find((l) => l.handoffId === poisoned.handoffId);
    expect(failure?.msg).toMatch(/expiring an approval failed/);
    expect(failure?.err?.message).toMatch(/cannot be written/);
  });

  it("does not stop the worker: the other approval expires and runs are taken; it is tried again with backoff", async () => {
    const { poisoned, good, attempts } = await aPoisonedApprovalAndAGoodOne();
    const started = Date.now();
    const stop = new AbortController();
    const worker = runWorker({ ...h.newDeps("worker-1"), databaseUrl: h.tdb.url }, { signal: stop.signal, concurrency: 4 });
    try {
      await until(async () => (await h.db.handoff.findUniqueOrThrow({ where: { id: good.handoffId } })).status === "EXPIRED", 5000);
      const { runId } = await startRun("Where is my order A-1001?");
      const runIds = [good.runId, runId];
      await until(async () => (await h.db.run.count({ where: { id: { in: runIds }, phase: "COMPLETED" } })) === 2, 5000);
      await new Promise((r) => setTimeout(r, Math.max(0, 5000 - (Date.now() - started))));
      // In 5 s: at its first pass and after its first backoffs — not once a second, each failing the whole pass.
      expect(await attempts()).toBeGreaterThanOrEqual(1);
      expect(await attempts()).toBeLessThanOrEqual(3);
      expect((await h.db.handoff.findUniqueOrThrow({ where: { id: poisoned.handoffId } })).status).toBe("PENDING");
      expect((await h.db.run.findUniqueOrThrow({ where: { id: poisoned.runId } })).phase).toBe("WAITING_FOR_APPROVAL");
      expect(await h.effects()).toHaveLength(0);
      expect(logLines().filter((l) => l.msg === "worker pass failed")).toEqual([]);
    } finally {
      stop.abort();
      await worker;
    }
  });

  it("does not wake a sleeping worker by its past expiry while its retry is still far off", async () => {
    const { poisoned, good } = await aPoisonedApprovalAndAGoodOne();
    // Only the refused one is due: a decision on the other, past its time, expires it.
    await expect(h.decide(good.handoffId, "raj@acme.test", "deny", { reason: "too late" })).rejects.toThrow(/expired/);
    expect((await h.db.handoff.findUniqueOrThrow({ where: { id: good.handoffId } })).status).toBe("EXPIRED");
    for (let i = 0; i < 5; i++) expiryRetries.failed(poisoned.handoffId); // five failures already: its next try is a minute off
    const stop = new AbortController();
    const worker = runWorker(
      { ...h.newDeps("worker-1"), databaseUrl: h.tdb.url },
      { signal: stop.signal, intervalMs: 200, idleMs: 60_000 },
    );
    try {
      // The expired one's run goes on in the worker; then the worker has nothing to do but wait for the retry.
      await until(async () => (await h.db.run.findUniqueOrThrow({ where: { id: good.runId } })).phase === "COMPLETED", 5000);
      await new Promise((r) => setTimeout(r, 500));
      const sent = await roundTripsDuring(() => new Promise((r) => setTimeout(r, 2500)));
      // Woken by its past expiry, the worker would look (approvals to expire, what is due) every second.
      expect(sent.map((s) => s.text)).toEqual([]);
    } finally {
      stop.abort();
      await worker;
    }
  });
});
