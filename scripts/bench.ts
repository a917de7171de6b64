/**
 * `npm run bench`: the harness's own cost, measured on the embedded PostgreSQL (or DATABASE_URL's server), in a
 * dedicated database `support_bench` that is reset first. Prints a table:
 *   - harness time per model turn (everything except the model call), median and p95, around turn 10 and
 *     around turn 200 of ONE conversation (it must not grow with the conversation);
 *   - park → decide → next model request latency;
 *   - rows and bytes written per turn (proportional to what the turn added, not to the conversation).
 * The model is the offline model, served by a process of its own (scripts/offline-model-server.ts) and called
 * over HTTP by the real SDK client, as Claude would be; the time of each call is measured and subtracted, and
 * its work (reading the whole conversation) is not charged to the harness's process.
 */
import { spawn } from "node:child_process";
import { performance } from "node:perf_hooks";
process.env.SUPPORT_DB_NAME = process.env.SUPPORT_BENCH_DB ?? "support_bench";
process.env.SUPPORT_SKIP_SEED = "1";

const { resetDatabase } = await import("@/lib/db/reset");
const { prepareDatabase } = await import("@/lib/db/prepare");
const { createPrisma } = await import("@/lib/db/client");
const { seedDemo } = await import("@/lib/db/seed");
const { stopEmbeddedIfOwner } = await import("@/lib/db/server");
const { createModelClient } = await import("@/lib/model/client");
const { OfflineScript } = await import("@/lib/model/offline");
const { say } = await import("@/lib/operator/commands");
const { receiveCustomerMessage } = await import("@/lib/conversations/intake");
const { decideHandoff } = await import("@/lib/handoffs/decide");
const { advanceConversationFrom, claimFor } = await import("@/lib/runtime/advance");
type ModelClient = import("@/lib/model/types").ModelClient;

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 110); // 2 model turns each → 220 turns
const WARMUP_MESSAGES = Number(process.env.BENCH_WARMUP_MESSAGES ?? 30); // another conversation first: a warm process, as a server is
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3); // measured conversations
const PARK_SAMPLES = Number(process.env.BENCH_PARK_SAMPLES ?? 30);

await resetDatabase();
const { url } = await prepareDatabase();
const db = createPrisma(url, { max: 4 });
await seedDemo(db);
const acme = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
const raj = await db.staffUser.findUniqueOrThrow({ where: { email: "raj@acme.test" } });

// The model server; each request carries the reply scripted for it (none: the deterministic support model).
const modelServer = spawn(process.execPath, ["--import", "tsx", "scripts/offline-model-server.ts"], { stdio: ["pipe", "pipe", "inherit"] });
const modelPort = await new Promise<number>((resolve, reject) => {
  modelServer.stdout.once("data", (line) => resolve((JSON.parse(String(line)) as { port: number }).port));
  modelServer.once("exit", (code) => reject(new Error(`the offline model server exited (${code})`)));
});
const script = new OfflineScript();
const inner = createModelClient({
  baseURL: `http://127.0.0.1:${modelPort}`,
  maxRetries: 0,
  fetch: (input, init) => {
    const step = script.take();
    const headers = new Headers(init?.headers);
    if (step) headers.set("x-offline-step", JSON.stringify(step));
    return fetch(input, { ...init, headers });
  },
});

// Every model call is timed so that harness time = wall time − model time.
let modelMs = 0;
let lastRequestStartedAt = 0;
const model: ModelClient = {
  mode: inner.mode,
  model: inner.model,
  async send(req, opts) {
    const t0 = performance.now();
    lastRequestStartedAt = t0;
    try {
      return await inner.send(req, opts);
    } finally {
      modelMs += performance.now() - t0;
    }
  },
};
const metrics = { toolMs: 0 };
const deps = { db, model, workerId: "bench", leaseMs: 60_000, metrics };

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const median = (xs: number[]) => pct(xs, 50);

async function writtenByRun(runId: string, conversationId: string, since: Date) {
  const rows = await db.$queryRawUnsafe<Array<{ rows: bigint; bytes: bigint }>>(
    `SELECT count(*)::bigint AS rows, coalesce(sum(b), 0)::bigint AS bytes FROM (
       SELECT pg_column_size(t.*) AS b FROM "Message" t WHERE "conversationId" = $2 AND "createdAt" >= $3
       UNION ALL SELECT pg_column_size(t.*) FROM "ToolCall" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "ModelCall" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "GateDecision" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "EffectLedger" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "AuditEvent" t WHERE "runId" = $1
       UNION ALL SELECT pg_column_size(t.*) FROM "Event" t WHERE "conversationId" = $2 AND "createdAt" >= $3
       UNION ALL SELECT pg_column_size(t.*) FROM "Run" t WHERE id = $1
     ) x`, runId, conversationId, since);
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
  const intake = await receiveCustomerMessage(db, { tenantId: acme.id, conversationId, text: `Message ${i}: where is ${order}?`, model: model.model, claimFor: claim });
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
const perTurn: Array<{ turn: number; harnessMs: number; toolMs: number; rows: number; bytes: number }> = [];
let turn = 0;
for (let round = 0; round < ROUNDS; round++) {
  const { conversationId } = await say(deps, { tenant: "acme", customerEmail: "dana@example.com", text: "hello" });
  turn = 0;
  for (let i = 0; i < MESSAGES; i++) {
    const since = new Date(Date.now() - 1);
    modelMs = 0;
    metrics.toolMs = 0;
    // The harness's work for one customer message: intake, then every step until the run ends.
    const t0 = performance.now();
    const runId = await exchange(conversationId, i);
    const wall = performance.now() - t0;
    const written = await writtenByRun(runId, conversationId, since);
    for (let k = 0; k < 2; k++) {
      turn += 1;
      perTurn.push({ turn, harnessMs: (wall - modelMs - metrics.toolMs) / 2, toolMs: metrics.toolMs / 2, rows: written.rows / 2, bytes: written.bytes / 2 });
    }
  }
}

// Park → decide → next model request.
const parkLatencies: number[] = [];
for (let i = 0; i < PARK_SAMPLES; i++) {
  const out = await say(deps, { tenant: "acme", customerEmail: "dana@example.com", text: "My order A-1002 arrived damaged, please refund it." });
  const handoff = out.handoffs[0]!;
  const t0 = performance.now();
  lastRequestStartedAt = 0;
  const decided = await decideHandoff(db, { tenantId: acme.id, staffId: raj.id }, { handoffId: handoff.id, decision: i % 2 ? "approve" : "deny", reason: "bench" });
  if (decided.kind === "awaiting_second_approval") throw new Error("unexpected");
  await advanceConversationFrom(deps, decided.runId);
  parkLatencies.push(lastRequestStartedAt - t0);
  await db.order.updateMany({ where: { number: "A-1002" }, data: { refundedCents: 0 } });
}

const windowOf = (lo: number, hi: number) => perTurn.filter((p) => p.turn >= lo && p.turn <= hi);
const rowsFor = (label: string, xs: typeof perTurn) => {
  const h = xs.map((x) => x.harnessMs);
  return { label, samples: xs.length, median: median(h), p95: pct(h, 95), toolMedian: median(xs.map((x) => x.toolMs)), rows: median(xs.map((x) => x.rows)), bytes: median(xs.map((x) => x.bytes)) };
};
const early = rowsFor("around turn 10", windowOf(1, 20));
const late = rowsFor("around turn 200", windowOf(190, 210));
const f = (n: number) => n.toFixed(2).padStart(8);

console.log(`\nHarness benchmark — ${process.env.DATABASE_URL ? "DATABASE_URL server" : "embedded PostgreSQL"}, offline model (model and tool-body time excluded)`);
console.log(`${ROUNDS} conversations of ${turn} turns each (after a ${WARMUP_MESSAGES}-message warm-up conversation); a window pools its turns across them (${early.samples} and ${late.samples} samples)\n`);
console.log(`| ${"measure".padEnd(42)}|   median |      p95 | target            |`);
console.log(`|${"-".repeat(43)}|----------|----------|-------------------|`);
for (const r of [early, late]) console.log(`| ${`harness ms per model turn, ${r.label}`.padEnd(42)}| ${f(r.median)} | ${f(r.p95)} | ≤ 5 / ≤ 15 ms     |`);
for (const r of [early, late]) console.log(`| ${`tool bodies ms/turn (excluded), ${r.label.replace("around ", "")}`.padEnd(42)}| ${f(r.toolMedian)} |          |                   |`);
console.log(`| park → decide → next model request (ms)   | ${f(median(parkLatencies))} | ${f(pct(parkLatencies, 95))} |                   |`);
console.log(`| rows written per turn, around turn 10     | ${f(early.rows)} |          | flat              |`);
console.log(`| rows written per turn, around turn 200    | ${f(late.rows)} |          | flat              |`);
console.log(`| bytes written per turn, around turn 10    | ${f(early.bytes)} |          | ∝ what it added   |`);
console.log(`| bytes written per turn, around turn 200   | ${f(late.bytes)} |          | ∝ what it added   |`);
const growth = late.median / early.median;
console.log(`\nGrowth of median harness time from turn 10 to turn 200: ×${growth.toFixed(2)}`);
console.log(`Targets met: median ${late.median <= 5 && early.median <= 5 ? "yes" : "NO"}, p95 ${late.p95 <= 15 && early.p95 <= 15 ? "yes" : "NO"}`);

modelServer.kill();
await db.$disconnect();
await stopEmbeddedIfOwner();
process.exit(0);
