/**
 * `npm run bench`: the harness's own cost, measured on the embedded PostgreSQL (or DATABASE_URL's server), in a
 * dedicated database `support_bench` that is reset first. Prints a table:
 *   - harness time per model turn (everything except the model call), median and p95, around turn 10 and
 *     around turn 200 of ONE conversation (it must not grow with the conversation);
 *   - park → decide → next model request latency: a refund the front-line agent proposes (as in bench:peers), and the
 *     same refund asked of the returns specialist (the decision travels down into its stored turn) — on a warm
 *     process, after BENCH_PARK_WARMUP approvals of each kind, whose figures are printed too (cold);
 *   - each of those split into the time spent waiting for PostgreSQL (its statements' round trips, outside model
 *     calls and tool bodies) and the process's own work, and this server's floor: a round trip and a one-row commit;
 *   - how fast the machine was before and after the run (./machine-speed.ts: a fixed piece of CPU work), and what its
 *     kernel charges before it (a fresh page's first touch, a system call, a wake-up between threads), and which
 *     hypervisor the machine runs under (as its kernel named it at boot);
 *   - statements (round trips to PostgreSQL, BEGIN and COMMIT included) per customer message and per model turn;
 *   - rows and bytes written per turn (proportional to what the turn added, not to the conversation).
 * The model is the offline model, served by a process of its own (scripts/offline-model-server.ts) and called
 * over HTTP by the real SDK client, as Claude would be; the time of each call is measured and subtracted, and
 * its work (reading the whole conversation) is not charged to the harness's process.
 */
import "./env-first"; // first: a bad variable stops here, with what to fix
import { startOfflineModelServer } from "./offline-model-process";
import { performance } from "node:perf_hooks";
import pg from "pg";
import {
  countStatements,
  coveredOutside,
  REFUND_INPUT,
  REFUND_REQUEST_TEXT,
  roundTripTimes,
  type SentStatement,
} from "../bench/peers/scenario";
import { describeKernelCosts, describeMachineSpeed, hypervisorNote, kernelCosts, machineHypervisor, machineSpeed } from "./machine-speed";
process.env.SUPPORT_DB_NAME = process.env.SUPPORT_BENCH_DB ?? "support_bench";
process.env.SUPPORT_SKIP_SEED = "1";

const { resetDatabase } = await import("@/lib/db/reset");
const { prepareDatabase } = await import("@/lib/setup/prepare");
const { createPrisma } = await import("@/lib/db/client");
const { seedDemo } = await import("@/lib/setup/seed");
const { stopEmbeddedIfOwner } = await import("@/lib/db/server");
const { createModelClient } = await import("@/lib/model/client");
const { OfflineScript } = await import("@/lib/model/offline");
const { say } = await import("@/lib/operator/commands");
const { receiveCustomerMessage } = await import("@/lib/conversations/intake");
const { resumeRun } = await import("@/lib/runtime/resume");
const { advanceConversationFrom, claimFor } = await import("@/lib/runtime/advance");
type ModelClient = import("@/lib/model/types").ModelClient;

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 110); // 2 model turns each → 220 turns
const WARMUP_MESSAGES = Number(process.env.BENCH_WARMUP_MESSAGES ?? 30); // another conversation first: a warm process, as a server is
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3); // measured conversations
const PARK_SAMPLES = Number(process.env.BENCH_PARK_SAMPLES ?? 30);
// Approvals before the measured ones: PostgreSQL plans a statement afresh on each of its first five executions on a
// connection (then keeps a generic plan), and the approval's statements are large — a server that has approved before
// has paid that. The first approvals are printed too (cold).
const PARK_WARMUP = Number(process.env.BENCH_PARK_WARMUP ?? 30);

// How fast the machine is before the run (and after it, below): the figures of different hours compare through it.
const speedBefore = machineSpeed();
const kernelBefore = await kernelCosts();
await resetDatabase();
const { url } = await prepareDatabase();
const db = createPrisma(url, { max: 4 });
await seedDemo(db);
const acme = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
const raj = await db.staffUser.findUniqueOrThrow({ where: { email: "raj@acme.test" } });

// The model server; each request carries the reply scripted for it (none: the deterministic support model).
const { child: modelServer, port: modelPortReady } = startOfflineModelServer();
const modelPort = await modelPortReady;
const script = new OfflineScript();
const inner = createModelClient({
  baseURL: `http://127.0.0.1:${modelPort}`,
  maxRetries: 0,
  fetch: (input, init) => {
    // A token count is not a model turn: it takes no scripted reply.
    const step = String(input instanceof Request ? input.url : input).endsWith("/count_tokens") ? undefined : script.take();
    const headers = new Headers(init?.headers);
    if (step) headers.set("x-offline-step", JSON.stringify(step));
    return fetch(input, { ...init, headers });
  },
});

// Every model call is timed so that harness time = wall time − model time (its span too: statements that overlap it
// are not waited for).
let modelMs = 0;
const modelSpans: Array<[number, number]> = [];
let lastRequestStartedAt = 0;
/** Called once when the next model request starts (the park samples count the statements before it). */
let onRequest: (() => void) | null = null;
const model: ModelClient = {
  mode: inner.mode,
  model: inner.model,
  async send(req, opts) {
    const t0 = performance.now();
    lastRequestStartedAt = t0;
    onRequest?.();
    try {
      return await inner.send(req, opts);
    } finally {
      modelMs += performance.now() - t0;
      modelSpans.push([t0, performance.now()]);
    }
  },
  async countTokens(req) {
    const t0 = performance.now();
    try {
      return await inner.countTokens(req);
    } finally {
      modelMs += performance.now() - t0;
      modelSpans.push([t0, performance.now()]);
    }
  },
};
const metrics = { toolMs: 0, toolSpans: [] as Array<[number, number]> };
const statements = countStatements(pg.Client); // Prisma's adapter and the runtime's SQL both end on pg's Client
statements.spans = [];
const deps = { db, model, workerId: "bench", leaseMs: 60_000, metrics };

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const median = (xs: number[]) => pct(xs, 50);

/** Where a conversation's writes stand: its last message and its last event (what a message's count starts after). */
type WrittenUpTo = { seq: number; eventId: bigint };
async function writtenUpTo(conversationId: string): Promise<WrittenUpTo> {
  const [row] = await db.$queryRawUnsafe<Array<{ seq: number; eventId: bigint }>>(
    `SELECT (SELECT coalesce(max(seq), -1) FROM "Message" WHERE "conversationId" = $1) AS seq,
            (SELECT coalesce(max(id), 0) FROM "Event" WHERE "conversationId" = $1)::bigint AS "eventId"`,
    conversationId,
  );
  return { seq: Number(row!.seq), eventId: BigInt(row!.eventId) };
}

/**
 * The rows a message wrote and their stored size: its run's rows, and the conversation's messages and events after
 * `after` (by sequence and id, never by clock: a millisecond's rounding once counted the previous message's reply).
 */
async function writtenByRun(runId: string, conversationId: string, after: WrittenUpTo) {
  const rows = await db.$queryRawUnsafe<Array<{ rows: bigint; bytes: bigint }>>(
    `SELECT count(*)::bigint AS rows, coalesce(sum(b), 0)::bigint AS bytes FROM (
       SELECT pg_column_size(t.*) AS b FROM "Message" t WHERE "conversationId" = $2 AND seq > $3
       UNION ALL SELECT pg_column_size(t.*) FROM "ToolCall" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "ModelCall" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "GateDecision" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "EffectLedger" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "AuditEvent" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "Event" t WHERE "conversationId" = $2 AND id > $4
       UNION ALL SELECT pg_column_size(t.*) FROM "Run" t WHERE id = $1
     ) x`,
    runId,
    conversationId,
    after.seq,
    after.eventId,
  );
  return { rows: Number(rows[0]!.rows), bytes: Number(rows[0]!.bytes) };
}

// One customer message as the widget sends it: intake takes the run's lease, then the same request advances it
// until the run ends. Each message → lookup_order (a tool turn) → a final reply: 2 model turns.
const orders = ["A-1001", "A-1002", "A-1003", "A-1004"];
async function exchange(conversationId: string, i: number) {
  const order = orders[i % orders.length]!;
  script.push(
    { reply: { content: [{ type: "tool_use", name: "lookup_order", input: { order_number: order } }], stop_reason: "tool_use" } },
    { reply: { content: [{ type: "text", text: `Order ${order} is on record. Anything else?` }], stop_reason: "end_turn" } },
  );
  const claim = claimFor(deps);
  const intake = await receiveCustomerMessage(db, {
    tenantId: acme.id,
    conversationId,
    text: `Message ${i}: where is ${order}?`,
    model: model.model,
    claimFor: claim,
  });
  if (intake.kind !== "started") throw new Error("expected a run");
  const result = await advanceConversationFrom(deps, intake.runId, { claimedAs: claim, run: intake.run });
  if (result.phase !== "COMPLETED") throw new Error(`expected the run to complete, got ${result.phase}`);
  return intake.runId;
}

// A warm-up conversation first (JIT, connections, prepared statements), so the figures are a running server's.
const warm = await say(deps, { tenant: "acme", customerEmail: "dana@example.com", text: "hello" });
for (let i = 0; i < WARMUP_MESSAGES; i++) await exchange(warm.conversationId, i);

// The measured conversations: each one long conversation, its per-turn figures pooled by turn number across
// rounds (so a few seconds of a noisy machine do not decide a window's median).
/**
 * Where a message's harness time went: waiting for PostgreSQL (the union of its statements' round trips, commits
 * included, outside model calls and tool bodies) and the rest, the process's own work.
 */
function databaseWaitMs(from: number, to: number, excluded = [...modelSpans, ...metrics.toolSpans]) {
  const waited = coveredOutside(statements.spans!, excluded, from, to);
  statements.spans!.length = 0;
  modelSpans.length = 0;
  metrics.toolSpans.length = 0;
  return waited;
}
/** One round trip as `roundTripTimes` gives it, with whether it overlapped a model request (not waited for whole). */
type Trip = { statements: string[]; ms: number; overlapsModel: boolean };
const tripsOf = (sent: SentStatement[], until: number, modelCalls: Array<[number, number]>): Trip[] =>
  roundTripTimes(sent, until).map((t) => ({
    statements: t.statements,
    ms: t.ms,
    overlapsModel: modelCalls.some(([a, b]) => a < t.to && b > t.from),
  }));
/** The round trips of each measured customer message around turn 10 (where the time of a message goes). */
const messageTrips: Trip[][] = [];
const perTurn: Array<{
  turn: number;
  harnessMs: number;
  databaseMs: number;
  toolMs: number;
  rows: number;
  bytes: number;
  statements: number;
}> = [];
let turn = 0;
for (let round = 0; round < ROUNDS; round++) {
  const { conversationId } = await say(deps, { tenant: "acme", customerEmail: "dana@example.com", text: "hello" });
  turn = 0;
  for (let i = 0; i < MESSAGES; i++) {
    const before = await writtenUpTo(conversationId);
    modelMs = 0;
    metrics.toolMs = 0;
    databaseWaitMs(0, 0); // forget what came before
    // The harness's work for one customer message: intake, then every step until the run ends.
    const s0 = statements.count;
    const sent: SentStatement[] = [];
    statements.sent = sent;
    const t0 = performance.now();
    const runId = await exchange(conversationId, i);
    const t1 = performance.now();
    statements.sent = null;
    if (turn < 20) messageTrips.push(tripsOf(sent, t1, modelSpans));
    const wall = t1 - t0;
    const databaseMs = databaseWaitMs(t0, t1);
    const messageStatements = statements.count - s0;
    const written = await writtenByRun(runId, conversationId, before);
    for (let k = 0; k < 2; k++) {
      turn += 1;
      perTurn.push({
        turn,
        harnessMs: (wall - modelMs - metrics.toolMs) / 2,
        databaseMs: databaseMs / 2,
        toolMs: metrics.toolMs / 2,
        rows: written.rows / 2,
        bytes: written.bytes / 2,
        statements: messageStatements / 2,
      });
    }
  }
}

// Park → decide → next model request: from the reviewer's approve to the request that tells the model the outcome —
// the decision, the refund, its ledger row and the tool result committed before it. `direct`: the front-line agent
// proposes refund_order (bench:peers' scenario); `specialist`: the deterministic offline model hands the same request
// to the returns specialist, whose stored turn the decision resumes.
async function parkSamples(kind: "direct" | "specialist", samples: number) {
  const latencies: number[] = [];
  const counts: number[] = [];
  const trips: number[] = [];
  const waits: number[] = [];
  const tripsPerSample: Trip[][] = [];
  for (let i = 0; i < samples; i++) {
    if (kind === "direct") {
      script.push({ reply: { content: [{ type: "tool_use", name: "refund_order", input: REFUND_INPUT }], stop_reason: "tool_use" } });
    }
    const out = await say(deps, { tenant: "acme", customerEmail: "dana@example.com", text: REFUND_REQUEST_TEXT });
    const handoff = out.handoffs[0];
    if (!handoff) throw new Error(`the ${kind} refund did not park (${out.phase})`);
    if (kind === "direct") script.push({ reply: { content: [{ type: "text", text: "Done." }], stop_reason: "end_turn" } });
    const s0 = statements.count;
    const r0 = statements.roundTrips;
    let atRequest = 0;
    let tripsAtRequest = 0;
    onRequest = () => {
      onRequest = null;
      atRequest = statements.count - s0;
      tripsAtRequest = statements.roundTrips - r0;
    };
    lastRequestStartedAt = 0;
    databaseWaitMs(0, 0);
    const sent: SentStatement[] = [];
    statements.sent = sent;
    const t0 = performance.now();
    const { outcome } = await resumeRun(
      deps,
      { tenantId: acme.id, staffId: raj.id },
      { handoffId: handoff.id, decision: "approve", reason: "bench" },
    );
    onRequest = null;
    statements.sent = null;
    if (outcome.kind !== "approved" || !lastRequestStartedAt)
      throw new Error(`the ${kind} approval did not resume the run (${outcome.kind})`);
    latencies.push(lastRequestStartedAt - t0);
    counts.push(atRequest);
    trips.push(tripsAtRequest);
    tripsPerSample.push(tripsOf(sent, lastRequestStartedAt, []));
    waits.push(databaseWaitMs(t0, lastRequestStartedAt, [])); // the refund's body is part of this measure
    await db.order.updateMany({ where: { number: "A-1002" }, data: { refundedCents: 0 } });
  }
  return { latencies, statements: counts, roundTrips: trips, databaseMs: waits, trips: tripsPerSample };
}
const coldDirect = await parkSamples("direct", PARK_WARMUP);
const coldSpecialist = await parkSamples("specialist", PARK_WARMUP);
const parkDirect = await parkSamples("direct", PARK_SAMPLES);
const parkSpecialist = await parkSamples("specialist", PARK_SAMPLES);
statements.spans = null;

// The floor under every figure above, on this server: a round trip, and a commit (a one-row INSERT in its own
// transaction, written to the WAL and flushed to disk — what each write of the runtime waits for at least).
async function timedStatements(client: pg.Client, text: string, n: number) {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await client.query(text);
    ms.push(performance.now() - t0);
  }
  return ms;
}
const probe = new pg.Client({ connectionString: url });
await probe.connect();
await probe.query("CREATE TABLE bench_commit_probe (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())");
await timedStatements(probe, "INSERT INTO bench_commit_probe DEFAULT VALUES", 50);
const roundTrips = await timedStatements(probe, "SELECT 1", 500);
const commits = await timedStatements(probe, "INSERT INTO bench_commit_probe DEFAULT VALUES", 500);
await probe.query("DROP TABLE bench_commit_probe");
await probe.end();
const speedAfter = machineSpeed();

const windowOf = (lo: number, hi: number) => perTurn.filter((p) => p.turn >= lo && p.turn <= hi);
const rowsFor = (label: string, xs: typeof perTurn) => {
  const h = xs.map((x) => x.harnessMs);
  return {
    label,
    samples: xs.length,
    median: median(h),
    p95: pct(h, 95),
    toolMedian: median(xs.map((x) => x.toolMs)),
    databaseMedian: median(xs.map((x) => x.databaseMs)),
    processMedian: median(xs.map((x) => x.harnessMs - x.databaseMs)),
    rows: median(xs.map((x) => x.rows)),
    bytes: median(xs.map((x) => x.bytes)),
    statements: median(xs.map((x) => x.statements)),
  };
};
const early = rowsFor("around turn 10", windowOf(1, 20));
const late = rowsFor("around turn 200", windowOf(190, 210));
// A window with no samples (BENCH_MESSAGES too small to reach it) prints a dash.
const f = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? "—".padStart(8) : n.toFixed(2).padStart(8));

console.log(
  `\nHarness benchmark — ${process.env.DATABASE_URL ? "DATABASE_URL server" : "embedded PostgreSQL"}, offline model (model and tool-body time excluded)`,
);
console.log(
  `${ROUNDS} conversations of ${turn} turns each (after a ${WARMUP_MESSAGES}-message warm-up conversation); a window pools its turns across them (${early.samples} and ${late.samples} samples)\n`,
);
console.log(`| ${"measure".padEnd(42)}|   median |      p95 | target            |`);
console.log(`|${"-".repeat(43)}|----------|----------|-------------------|`);
for (const r of [early, late])
  console.log(`| ${`harness ms per model turn, ${r.label}`.padEnd(42)}| ${f(r.median)} | ${f(r.p95)} | median ≤ 2 ms     |`);
for (const r of [early, late]) {
  const at = r.label.replace("around ", "");
  console.log(`| ${`… waiting for PostgreSQL, ${at}`.padEnd(42)}| ${f(r.databaseMedian)} |          |                   |`);
  console.log(`| ${`… the process's own work, ${at}`.padEnd(42)}| ${f(r.processMedian)} |          |                   |`);
}
for (const r of [early, late])
  console.log(
    `| ${`tool bodies ms/turn (excluded), ${r.label.replace("around ", "")}`.padEnd(42)}| ${f(r.toolMedian)} |          |                   |`,
  );
console.log(
  `| approve → next model request, direct (ms) | ${f(median(parkDirect.latencies))} | ${f(pct(parkDirect.latencies, 95))} | median ≤ 5 ms     |`,
);
console.log(`| … waiting for PostgreSQL (ms)             | ${f(median(parkDirect.databaseMs))} |          |                   |`);
console.log(
  `| … through the returns specialist (ms)     | ${f(median(parkSpecialist.latencies))} | ${f(pct(parkSpecialist.latencies, 95))} |                   |`,
);
if (PARK_WARMUP) {
  console.log(
    `| ${`… cold: the first ${PARK_WARMUP}, direct (ms)`.padEnd(42)}| ${f(median(coldDirect.latencies))} | ${f(pct(coldDirect.latencies, 95))} |                   |`,
  );
  console.log(
    `| ${`… cold: the first ${PARK_WARMUP}, specialist (ms)`.padEnd(42)}| ${f(median(coldSpecialist.latencies))} | ${f(pct(coldSpecialist.latencies, 95))} |                   |`,
  );
}
console.log(`| statements per customer message, turn 10  | ${f(early.statements * 2)} |          |                   |`);
console.log(`| statements per customer message, turn 200 | ${f(late.statements * 2)} |          | flat              |`);
console.log(`| statements, approve → next request        | ${f(median(parkDirect.statements))} |          |                   |`);
console.log(`| … through the returns specialist          | ${f(median(parkSpecialist.statements))} |          |                   |`);
console.log(`| round trips, approve → next request       | ${f(median(parkDirect.roundTrips))} |          |                   |`);
console.log(`| … through the returns specialist          | ${f(median(parkSpecialist.roundTrips))} |          |                   |`);
console.log(`| rows written per turn, around turn 10     | ${f(early.rows)} |          | flat              |`);
console.log(`| rows written per turn, around turn 200    | ${f(late.rows)} |          | flat              |`);
console.log(`| bytes written per turn, around turn 10    | ${f(early.bytes)} |          | ∝ what it added   |`);
console.log(`| bytes written per turn, around turn 200   | ${f(late.bytes)} |          | ∝ what it added   |`);
console.log(`| this server: a round trip (SELECT 1), ms  | ${f(median(roundTrips))} | ${f(pct(roundTrips, 95))} |                   |`);
console.log(`| this server: a commit (1-row INSERT), ms  | ${f(median(commits))} | ${f(pct(commits, 95))} |                   |`);
console.log(
  `\nThis machine, a fixed piece of CPU work (scripts/machine-speed.ts; lower is faster): ${describeMachineSpeed(speedBefore)} before the run, ${describeMachineSpeed(speedAfter)} after it`,
);
console.log(`This machine, its kernel (scripts/machine-speed.ts; lower is faster), before the run: ${describeKernelCosts(kernelBefore)}`);
const hypervisor = machineHypervisor();
const hypervisorMeans = hypervisorNote(hypervisor);
console.log(`This machine, its hypervisor (the kernel's boot log): ${hypervisor}${hypervisorMeans ? ` — ${hypervisorMeans}` : ""}`);
const growth = late.median / early.median;
console.log(`\nGrowth of median harness time from turn 10 to turn 200: ×${growth.toFixed(2)}`);
const parkMedian = median(parkDirect.latencies);
console.log(
  `Targets (issue 8): harness median ≤ 2 ms at turns 10 and 200 — ${late.median <= 2 && early.median <= 2 ? "met" : "NOT met"}; ` +
    `approve → next request median ≤ 5 ms — ${parkMedian <= 5 ? "met" : "NOT met"}`,
);

/**
 * Where the time goes, round trip by round trip: the median of each (by its position, over the samples that made the
 * same number of them), the statements it carried, and whether it overlapped a model request.
 */
function printTrips(title: string, samples: Trip[][], total: number) {
  const counts = new Map<number, number>();
  for (const t of samples) counts.set(t.length, (counts.get(t.length) ?? 0) + 1);
  const usual = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
  const alike = samples.filter((t) => t.length === usual);
  if (!alike.length || usual === undefined) return;
  console.log(
    `\n${title} — median ${total.toFixed(2)} ms; its round trips (median of ${alike.length} alike samples of ${samples.length}):`,
  );
  // A statement in a few words: BEGIN/COMMIT, or the tables it writes and the others it reads.
  const brief = (sql: string) => {
    const text = sql.trim();
    if (/^(begin|commit|rollback)\b/i.test(text)) return text.toUpperCase();
    const tables = (re: RegExp) => [...new Set([...text.matchAll(re)].map((m) => m[1]!))];
    const written = tables(/(?:insert\s+into|update)\s+"(\w+)"/gi);
    const read = tables(/(?:from|join)\s+"(\w+)"/gi).filter((t) => !written.includes(t));
    return [written.length ? `writes ${written.join(", ")}` : "", read.length ? `reads ${read.join(", ")}` : ""].filter(Boolean).join("; ");
  };
  for (let k = 0; k < usual; k++) {
    const first = alike[0]![k]!;
    const ms = median(alike.map((t) => t[k]!.ms));
    const overlaps = alike.filter((t) => t[k]!.overlapsModel).length > alike.length / 2;
    console.log(
      `  ${String(k + 1).padStart(2)}  ${ms.toFixed(2).padStart(6)} ms${overlaps ? " (overlaps a model request)" : ""}  ${first.statements.map(brief).join(" · ")}`,
    );
  }
}
printTrips("A customer message around turn 10 (two model turns: its harness time is twice a turn's)", messageTrips, early.median * 2);
printTrips("Approve → next model request, direct", parkDirect.trips, median(parkDirect.latencies));

// A long conversation: LONG_MESSAGES messages (each customer message answered with one reply), under the context
// budget (SUPPORT_CONTEXT_BUDGET_TOKENS). What each request carried and cost is read from its ModelCall row; the
// cost is priced as Claude's (the offline model's own calls are free), cache reads and writes as such.
const LONG_MESSAGES = Number(process.env.BENCH_LONG_MESSAGES ?? 1000);
const { estimateCostMicros, DEFAULT_MODEL } = await import("@/lib/model/client");
const { contextBudget } = await import("@/lib/runtime/context");
const longStart = await say(deps, { tenant: "acme", customerEmail: "dana@example.com", text: "hello" });
const longConversation = longStart.conversationId;
const checkpoints = [10, 100, 500, 1000].filter((n) => n <= LONG_MESSAGES);
/** Each turn of the long conversation: the messages the conversation had after it, and what its request carried. */
const longTurns: Array<{ message: number; requestTokens: number; costMicros: number; cacheRead: number; summary: boolean; cut: boolean }> =
  [];
const longStarted = performance.now();
for (let i = 1; i * 2 + 2 <= LONG_MESSAGES; i++) {
  const order = orders[i % orders.length]!;
  script.push({
    reply: {
      content: [
        {
          type: "text",
          text: `About ${order}: it is on record, and here is everything I can tell you about it (reply ${i}). Anything else?`,
        },
      ],
      stop_reason: "end_turn",
    },
  });
  const claim = claimFor(deps);
  const intake = await receiveCustomerMessage(db, {
    tenantId: acme.id,
    conversationId: longConversation,
    text: `Message ${i}: can you tell me again what is happening with ${order}? I would like to be sure I understood it.`,
    model: model.model,
    claimFor: claim,
  });
  if (intake.kind !== "started") throw new Error("expected a run");
  const result = await advanceConversationFrom(deps, intake.runId, { claimedAs: claim, run: intake.run });
  if (result.phase !== "COMPLETED") throw new Error(`message ${i * 2 + 1} of the long conversation ended ${result.phase}`);
}
// Every turn's request as its ModelCall row recorded it (one per run here), in order.
const calls = await db.modelCall.findMany({ where: { run: { conversationId: longConversation } }, orderBy: { createdAt: "asc" } });
let lastSummary: string | null = null;
for (const [k, call] of calls.entries()) {
  longTurns.push({
    message: k * 2 + 2,
    requestTokens: call.requestTokens ?? call.inputTokens + call.cacheReadTokens + call.cacheWriteTokens,
    costMicros: estimateCostMicros(DEFAULT_MODEL, {
      input_tokens: call.inputTokens,
      output_tokens: call.outputTokens,
      cache_read_input_tokens: call.cacheReadTokens,
      cache_creation_input_tokens: call.cacheWriteTokens,
    }),
    cacheRead: call.cacheReadTokens,
    summary: call.contextSummaryId !== null,
    cut: call.contextSummaryId !== lastSummary,
  });
  lastSummary = call.contextSummaryId;
}
const longHandoffs = await db.handoff.count({ where: { conversationId: longConversation } });
const cuts = longTurns.filter((t) => t.cut).length;
console.log(
  `\nA conversation of ${LONG_MESSAGES} messages (context budget ${contextBudget()} tokens): ` +
    `${longHandoffs} handoffs, ${cuts} summary cuts, ${((performance.now() - longStarted) / 1000).toFixed(1)} s in all.`,
);
console.log(
  "Each row: the 10 turns up to that message (a turn = a customer message and its reply), averaged — a cut's cache write counts in its window.\n",
);
console.log(
  "| up to message | request tokens (mean, max) | read from cache (mean) | cost per turn ($, as Claude Sonnet; mean) | with a summary |",
);
console.log(
  "|--------------:|---------------------------:|-----------------------:|------------------------------------------:|:--------------:|",
);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const firstCost = { value: 0 };
for (const c of checkpoints) {
  const win = longTurns.filter((t) => t.message <= c && t.message > c - 20);
  if (!win.length) continue;
  const cost = mean(win.map((t) => t.costMicros)) / 1e6;
  if (!firstCost.value) firstCost.value = cost;
  console.log(
    `| ${String(c).padStart(13)} | ${`${Math.round(mean(win.map((t) => t.requestTokens)))}, ${Math.max(...win.map((t) => t.requestTokens))}`.padStart(26)} | ${String(Math.round(mean(win.map((t) => t.cacheRead)))).padStart(22)} | ${`${cost.toFixed(4)} (×${(cost / firstCost.value).toFixed(2)})`.padStart(41)} | ${`${win.filter((t) => t.summary).length}/${win.length}`.padStart(14)} |`,
  );
}
const all = mean(longTurns.map((t) => t.costMicros)) / 1e6;
console.log(
  `\nMean cost per turn over the whole conversation: $${all.toFixed(4)}; the costliest turn: $${(Math.max(...longTurns.map((t) => t.costMicros)) / 1e6).toFixed(4)} (a cut).`,
);

modelServer.kill();
await db.$disconnect();
await stopEmbeddedIfOwner();
process.exit(0);
