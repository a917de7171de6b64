/**
 * `npm run load`: the real server under load. Builds the app if needed, starts two web processes (`next start`)
 * and two workers (`npm run worker`) on one PostgreSQL (the embedded one, or DATABASE_URL's server) in a fresh
 * database, then drives simulated customers through the widget's HTTP endpoints (half to each web process) and
 * simulated reviewers through the console's, and prints what it measured. The figures that must be exactly right
 * are computed from the database at the end; the command exits non-zero if any is wrong.
 *
 *   npm run load
 *   LOAD_VISITORS=200 LOAD_SECONDS=60 LOAD_PORTS=3310,3311 npm run load
 *
 * Phases: (1) every visitor chats for LOAD_SECONDS (anonymous visitors and shop-signed customers; a signed-in
 * customer's damaged order is refunded automatically, an effect); (2) LOAD_HANDOFFS signed-in customers ask for a
 * refund over the automatic limit, which parks for approval; (3) reviewers race: every reviewer session approves
 * every handoff in the queue (LOAD_REVIEWERS × LOAD_HANDOFFS decisions) — exactly one decision per handoff may win;
 * (4) the checks; (5) the queue's first page with LOAD_QUEUE_HANDOFFS handoffs in a separate database.
 */
process.env.SUPPORT_DB_NAME ??= "support_load";

import "../env-first"; // first: a bad variable stops here, with what to fix
import { spawnSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { buildIfStale, nextAuthSecret } from "../app-build";
import { prepareDatabase } from "@/lib/setup/prepare";
import { resetDatabase } from "@/lib/db/reset";
import { ensureDatabaseUrl, isEmbeddedUnavailable, projectRoot, stopEmbeddedIfOwner } from "@/lib/db/server";
import { createPrisma } from "@/lib/db/client";
import { DEMO_PASSWORD } from "@/lib/setup/seed";
import { policySettings, publishPolicy } from "@/lib/settings/policy";
import { env } from "@/lib/env";
import { signCustomerIdentity } from "@/lib/widget/identity";
import { describeKernelCosts, describeMachineSpeed, hypervisorNote, kernelCosts, machineHypervisor, machineSpeed } from "../machine-speed";
import { exactFigures } from "./checks";
import { Cluster, waitHealthy } from "./cluster";
import { type CpuSplit, postmasterOf, startCpuMeter } from "./cpu";
import { type ActionAnswer, Reviewer, serverActionId } from "./reviewer-client";
import { ms, percentile, pool, rate, shuffle, thousands } from "./stats";
import { HttpError, WidgetVisitor } from "./widget-client";

const num = (name: string, fallback: number) => {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive whole number, not ${JSON.stringify(v)}`);
  return n;
};
const VISITORS = num("LOAD_VISITORS", 200);
const SECONDS = num("LOAD_SECONDS", 60);
const HANDOFFS = Math.min(num("LOAD_HANDOFFS", 100), VISITORS);
const REVIEWERS = num("LOAD_REVIEWERS", 10);
const THINK_MS = Number(process.env.LOAD_THINK_MS ?? 500);
const QUEUE_HANDOFFS = num("LOAD_QUEUE_HANDOFFS", 100_000);
/** How long each window of the at-rest phase measures (widgets open, then closed). */
const REST_SECONDS = num("LOAD_REST_SECONDS", 30);
/** `server`: the offline model in a process of its own behind HTTP (as Claude); `in-process`: inside each server process. */
const MODEL = env().LOAD_MODEL;
const PORTS = (process.env.LOAD_PORTS ?? "3310,3311").split(",").map((p) => Number(p.trim()));
const REPLY_TIMEOUT_MS = 60_000;
/** The outcome of a parked refund reaches the chat after the race: waited for from before it starts. */
const OUTCOME_TIMEOUT_MS = 240_000;
const SHOP = "acme";

const root = projectRoot();
const logDir = path.join(root, ".data", "load");
const log = (line: string) => console.log(`[load] ${line}`);
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

type Kind = "anonymous" | "signed-in";
interface Visitor {
  n: number;
  kind: Kind;
  /** signed-in visitors: their email and orders (one refunded automatically, one over the limit) */
  email?: string;
  smallOrder?: string;
  bigOrder?: string;
  client: WidgetVisitor;
  port: number;
}
interface Exchange {
  conversationId: string;
  seq: number;
  sentAt: number;
  seenAt: number;
  port: number;
}

/**
 * The widget's limits, as a shop expecting this traffic would publish them (through the admin's own path: a new
 * policy version, audited). The demo's defaults — 1,200 messages a minute per shop, 30 per client IP — would cap the
 * run at 20 messages a second and answer the rest 429; these simulated customers also type faster than people.
 */
const LOAD_LIMITS = { messagesPerMinutePerShop: 24_000, messagesPerMinutePerIp: 240, conversationsPerHourPerIp: 600 };
async function raiseWidgetLimits(url: string) {
  const prisma = createPrisma(url, { max: 2 });
  try {
    const tenant = await prisma.tenant.findUniqueOrThrow({ where: { slug: SHOP } });
    const admin = await prisma.staffUser.findFirstOrThrow({ where: { tenantId: tenant.id, role: "admin", deactivatedAt: null } });
    const actor = { tenantId: tenant.id, staffId: admin.id };
    const current = await policySettings(prisma, actor);
    const rules = current.current.rules;
    await publishPolicy(prisma, actor, {
      baseVersion: current.current.version,
      rules: { ...rules, limits: { ...rules.limits, ...LOAD_LIMITS } },
    });
    log(
      `the shop's widget limits raised for the load (a new policy version): ${LOAD_LIMITS.messagesPerMinutePerShop} messages/min per shop, ${LOAD_LIMITS.messagesPerMinutePerIp} per IP, ${LOAD_LIMITS.conversationsPerHourPerIp} conversations/h per IP`,
    );
  } finally {
    await prisma.$disconnect();
  }
}

const ANONYMOUS_LINES = ["Hi there!", "What is your return policy?", "Where is my order A-1001?", "Thanks, that helps."];

async function main() {
  const config = env();
  const cores = os.availableParallelism();
  log(
    `machine: ${cores} cores, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")} (before the run)`,
  );
  if (!PORTS.every((p) => Number.isInteger(p) && p > 0 && p < 65536) || PORTS.length < 2)
    throw new Error(`LOAD_PORTS must list two ports, not ${JSON.stringify(process.env.LOAD_PORTS)}`);

  // A fresh database: reset, migrate, demo data (as `npm start -- --reset-db`).
  await resetDatabase();
  await prepareDatabase();
  const url = await ensureDatabaseUrl();
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  cleanup.push(() => db.end());
  const visitors = await makeVisitors(db);
  await raiseWidgetLimits(url);
  log(`database ${config.SUPPORT_DB_NAME} ready (${config.DATABASE_URL ? "DATABASE_URL's server" : "embedded PostgreSQL"})`);

  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    NEXT_TELEMETRY_DISABLED: "1",
    NEXTAUTH_SECRET: nextAuthSecret(config),
    // Runs are advanced by the web process that took the message and by the two worker processes only.
    SUPPORT_IN_PROCESS_WORKER: "0",
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
  };
  buildIfStale(childEnv, "load");
  const actionId = serverActionId(root, "lib/actions/console.ts", "decideHandoffAction");

  const cluster = new Cluster(root, logDir, childEnv);
  cleanup.push(() => cluster.stop());
  if (MODEL === "server") {
    // The model is a service the processes call over HTTP, as Claude is (the same SDK client, the Messages API), so
    // its work does not hold up a web process's event loop; "model time excluded" then excludes only the model.
    const port = await cluster.modelServer();
    Object.assign(childEnv, {
      ANTHROPIC_API_KEY: "offline-model-server",
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
      ANTHROPIC_MODEL: "offline-support-model",
    });
  }
  for (const port of PORTS.slice(0, 2)) cluster.web(port);
  cluster.worker(1);
  cluster.worker(2);
  const bases = PORTS.slice(0, 2).map((p) => `http://127.0.0.1:${p}`);
  await Promise.all(bases.map((b) => waitHealthy(`${b}/api/health`, cluster, 120_000)));
  log(
    `serving: web ${PORTS.slice(0, 2).join(" and ")}, workers ×2, model ${MODEL === "server" ? "in a process of its own (HTTP)" : "inside each process"} (logs in ${path.relative(root, logDir)}/)`,
  );

  const sampler = sampleConnections(url, new URL(url).pathname.slice(1));
  cleanup.push(() => sampler.stop());

  // Reviewers sign in through next-auth, alternating between the two web processes.
  const staff = ["raj@acme.test", "rita@acme.test", "sol@acme.test"];
  const reviewers = Array.from({ length: REVIEWERS }, (_, i) => new Reviewer(bases[i % 2]!, staff[i % staff.length]!));
  await Promise.all(reviewers.map((r) => r.signIn(DEMO_PASSWORD)));

  for (const v of visitors) v.client = new WidgetVisitor(`http://127.0.0.1:${v.port}`, SHOP, `10.${(v.n >> 8) & 255}.${v.n & 255}.7`);
  const secret = config.ACME_WIDGET_SECRET ?? "acme-widget-secret-dev";
  const identity = (v: Visitor) => (v.email ? signCustomerIdentity(secret, v.email, 600, { shop: SHOP }) : Promise.resolve(null));
  const errors = new Map<string, number>();
  const noteError = (err: unknown) => {
    const key =
      err instanceof HttpError ? `HTTP ${err.status} ${err.code}` : err instanceof Error ? err.message.replace(/\(.*\)/, "") : String(err);
    errors.set(key, (errors.get(key) ?? 0) + 1);
  };

  // ---- Phase 1: every visitor chats. ----
  const exchanges: Exchange[] = [];
  const acceptedMessages: { conversationId: string; seq: number }[] = [];
  const conversations = new Set<string>();
  let accepted = 0;
  let opened = 0;
  const loadAvgBefore = os.loadavg()[0]!;
  // How fast the machine is, with the cluster up and idle: runs of different hours compare through it. Not again at
  // the end, where the machine is not idle (one run printed 15.7 ms there against 10.1 before the chat; PostgreSQL
  // may still be at work on the queue's 100,000 handoffs).
  const speedBefore = machineSpeed();
  const kernelBefore = await kernelCosts();
  const openStart = Date.now();
  await Promise.all(
    visitors.map(async (v) => {
      await v.client.open(await identity(v));
      conversations.add(v.client.conversationId);
    }),
  );
  const openMs = Date.now() - openStart;
  log(`phase 1: ${VISITORS} visitors opened their conversations in ${ms(openMs)}; chatting for ${SECONDS} s…`);
  // Where the chat phase's CPU goes, by process: the two cores are shared by all of these.
  const backendPid = (await db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
  const postmaster = postmasterOf(backendPid);
  const leadersNamed = (prefix: string) => () =>
    cluster.members.filter((m) => m.name.startsWith(prefix) && m.child.pid).map((m) => m.child.pid!);
  const cpuMeter = startCpuMeter({
    "web processes": leadersNamed("web-"),
    workers: leadersNamed("worker-"),
    ...(postmaster ? { PostgreSQL: () => [postmaster] } : {}),
    ...(MODEL === "server" ? { "model server": leadersNamed("model") } : {}),
  });
  const walFlushesBefore = await walFlushes(db);
  const t1 = Date.now();
  const deadline = t1 + SECONDS * 1000;
  async function exchange(v: Visitor, text: string): Promise<void> {
    const sentAt = Date.now();
    const { seq } = await v.client.send(text);
    accepted++;
    acceptedMessages.push({ conversationId: v.client.conversationId, seq });
    const reply = await v.client.nextReply(seq, REPLY_TIMEOUT_MS);
    const seen = v.client.replies.find((r) => r.seq === reply.seq)!;
    exchanges.push({ conversationId: v.client.conversationId, seq, sentAt, seenAt: seen.seenAt, port: v.port });
  }
  await Promise.all(
    visitors.map(async (v) => {
      let turn = 0;
      let refunded = false;
      while (Date.now() < deadline) {
        try {
          if (turn > 0 && turn % 4 === 0) {
            // A new visitor takes this one's place (or the same one opens a new chat).
            await v.client.open(await identity(v));
            conversations.add(v.client.conversationId);
            opened++;
          }
          let text: string;
          if (v.kind === "anonymous") text = ANONYMOUS_LINES[turn % ANONYMOUS_LINES.length]!;
          else if (!refunded) {
            text = `my order ${v.smallOrder} arrived damaged, please refund it`;
            refunded = true;
          } else text = turn % 2 ? `Where is my order ${v.smallOrder}?` : "Hi there!";
          turn++;
          await exchange(v, text);
        } catch (err) {
          noteError(err);
          await sleep(500);
        }
        if (THINK_MS > 0) await sleep(Math.random() * THINK_MS);
      }
    }),
  );
  const phase1Ms = Date.now() - t1;
  const phase1Accepted = accepted;
  const phase1Cpu = cpuMeter.stop();
  const walFlushesAfter = await walFlushes(db);
  const loadAvgDuring = os.loadavg()[0]!;
  const connectionsPhase1 = sampler.max();

  // ---- Phase 2: signed-in customers ask for refunds over the automatic limit; each parks for approval. ----
  const askers = visitors.filter((v) => v.kind === "signed-in").slice(0, HANDOFFS);
  log(`phase 2: ${askers.length} customers ask for a $250 refund (over the automatic limit: parks for a reviewer)…`);
  const parked = new Map<Visitor, number>(); // the seq of the "with our team" notice: the outcome comes after it
  await Promise.all(
    askers.map(async (v) => {
      try {
        await v.client.open(await identity(v));
        conversations.add(v.client.conversationId);
        const { seq } = await v.client.send(`my order ${v.bigOrder} arrived damaged, please refund it`);
        accepted++;
        acceptedMessages.push({ conversationId: v.client.conversationId, seq });
        const notice = await v.client.nextReply(seq, REPLY_TIMEOUT_MS);
        parked.set(v, notice.seq);
      } catch (err) {
        noteError(err);
      }
    }),
  );
  let queue = await reviewers[0]!.queue();
  for (const until = Date.now() + 60_000; queue.length < HANDOFFS && Date.now() < until; queue = await reviewers[0]!.queue())
    await sleep(500);
  log(`phase 2: ${queue.length} approvals waiting in the console's queue`);

  // ---- Phase 3: every reviewer approves every handoff at once; exactly one decision per handoff may win. ----
  const outcomes = new Map<string, number>();
  const decidedAt = Date.now();
  const outcomeWaits = [...parked].map(async ([v, afterSeq]) => {
    try {
      const m = await v.client.nextReply(afterSeq, OUTCOME_TIMEOUT_MS);
      return v.client.replies.find((r) => r.seq === m.seq)!.seenAt;
    } catch (err) {
      noteError(err);
      return null;
    }
  });
  // Every reviewer reads the queue first (all see every handoff pending), then all decide at once.
  const seenBy = await Promise.all(reviewers.map((r) => r.queue()));
  const t3 = Date.now();
  await Promise.all(
    reviewers.map(async (r, i) => {
      await pool(shuffle(seenBy[i]!), 10, async (h) => {
        let answer: ActionAnswer;
        try {
          answer = await r.approve(actionId, h.id, h.version);
        } catch (err) {
          answer = { ok: false, code: err instanceof Error ? err.message : String(err), httpStatus: 0 };
        }
        const key = answer.ok ? `ok: ${answer.outcome}` : `refused: ${answer.code}`;
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      });
    }),
  );
  const raceMs = Date.now() - t3;
  const decisions = [...outcomes.values()].reduce((a, b) => a + b, 0);
  const outcomeSeen = (await Promise.all(outcomeWaits)).filter((t): t is number => t !== null);

  // Let whatever is still in flight finish (a reply being written, a run a worker resumes).
  for (const until = Date.now() + 30_000; Date.now() < until; await sleep(500)) {
    const { n } = (
      await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "Run" WHERE "conversationId" = ANY($1) AND phase IN ('RUNNING', 'WAITING_FOR_RETRY')`,
        [[...conversations]],
      )
    ).rows[0]!;
    if (n === 0) break;
  }
  const connections = sampler.max();
  await sampler.stop();

  // ---- Phase 4: the figures, from the database. ----
  const exact = await exactFigures(db, [...conversations], acceptedMessages);
  const raceEffects = (
    await db.query<{ n: number; refunds: number; approved: number }>(
      `SELECT (SELECT count(*)::int FROM "Handoff" h JOIN "EffectLedger" e ON e."toolCallId" = h."toolCallId" WHERE h.id = ANY($1)) AS n,
              (SELECT count(*)::int FROM "Refund" f JOIN "Order" o ON o.id = f."orderId" WHERE o.id LIKE 'loadbig%') AS refunds,
              (SELECT count(*)::int FROM "Handoff" h WHERE h.id = ANY($1) AND h.status = 'APPROVED' AND h."decidedById" IS NOT NULL) AS approved`,
      [queue.map((h) => h.id)],
    )
  ).rows[0]!;
  const modelMs = await modelTimePerExchange(db, exchanges);
  const latency = exchanges.map((e) => e.seenAt - e.sentAt);
  const latencyExModel = latency.map((l, i) => Math.max(0, l - modelMs[i]!));
  const serverSide = await serverSideLatency(db, exchanges);
  const wallLatencyByPort = PORTS.slice(0, 2).map((p) => exchanges.filter((e) => e.port === p).length);

  // ---- At rest: every visitor's widget stays open and nobody writes; then every widget closes. ----
  log(`at rest: ${visitors.length} widgets open, nobody writing (${REST_SECONDS} s), then every widget closed (${REST_SECONDS} s)…`);
  const rest = await databaseAtRest(db, visitors);

  await cluster.stop();
  for (const v of visitors) v.client.close();

  // ---- Phase 5: the queue's first page with many handoffs (a separate database on the same server). ----
  log(`phase 5: the queue's first page with ${QUEUE_HANDOFFS.toLocaleString("en")} handoffs…`);
  const queueUrl = new URL(url);
  queueUrl.pathname = `/${new URL(url).pathname.slice(1)}_queue`;
  const bench = spawnSync(
    process.execPath,
    [
      "--conditions=react-server",
      "--import",
      "tsx",
      path.join(root, "scripts", "load", "queue-bench.ts"),
      queueUrl.toString(),
      String(QUEUE_HANDOFFS),
    ],
    { cwd: root, env: { ...process.env, SUPPORT_DB_NAME: undefined, LOG_LEVEL: "warn" }, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 },
  );
  if (bench.status !== 0) throw new Error(`the queue benchmark failed:\n${bench.stderr}`);
  const q = JSON.parse(bench.stdout.trim().split("\n").at(-1)!) as {
    handoffs: number;
    pending: number;
    fillMs: number;
    pageRows: number;
    pageMedianMs: number;
    pageP95Ms: number;
    statementMedianMs: number;
    executionMs: number;
    planNodes: string[];
    listMedianMs: number;
    listExecutionMs: number;
    listPlanNodes: string[];
    dueMedianMs: number;
    dueExecutionMs: number;
    duePlanNodes: string[];
    expiryMedianMs: number;
    expiryExecutionMs: number;
    expiryPlanNodes: string[];
  };

  // ---- The report. ----
  const line = (label: string, value: string) => console.log(`  ${label.padEnd(44)} ${value}`);
  const f1 = (x: number) => x.toFixed(1);
  console.log("");
  console.log(
    `Load: ${VISITORS} visitors (${visitors.filter((v) => v.kind === "signed-in").length} shop-signed, ${visitors.filter((v) => v.kind === "anonymous").length} anonymous), ${SECONDS} s, think time 0–${THINK_MS} ms`,
  );
  console.log(
    `  machine: ${cores} cores; load average ${loadAvgBefore.toFixed(2)} before, ${loadAvgDuring.toFixed(2)} at the end of phase 1 (1-min)`,
  );
  console.log(
    `  machine speed: a fixed piece of CPU work (scripts/machine-speed.ts; lower is faster) took ${describeMachineSpeed(speedBefore)} before the chat`,
  );
  console.log(`  machine's kernel (scripts/machine-speed.ts; lower is faster), before the chat: ${describeKernelCosts(kernelBefore)}`);
  const hypervisor = machineHypervisor();
  const note = hypervisorNote(hypervisor);
  console.log(`  machine's hypervisor (the kernel's boot log): ${hypervisor}${note ? ` — ${note}` : ""}`);
  console.log(
    `  server: 2 × next start (${PORTS.slice(0, 2).join(", ")}), 2 × npm run worker, ${config.DATABASE_URL ? "DATABASE_URL" : "embedded PostgreSQL"}; offline model ${MODEL === "server" ? "in a process of its own (HTTP, as Claude)" : "inside each server process"}`,
  );
  line(
    "conversations opened per second",
    `${f1(rate(opened, phase1Ms))} during the chat (${opened + VISITORS + askers.length} in all; the first ${VISITORS} at once in ${ms(openMs)}: ${f1(rate(VISITORS, openMs))}/s)`,
  );
  line(
    "customer messages per second",
    `${f1(rate(phase1Accepted, phase1Ms))} (${phase1Accepted} accepted and answered in ${f1(phase1Ms / 1000)} s; ${wallLatencyByPort.join(" / ")} per web process)`,
  );
  for (const [label, value] of cpuLines(phase1Cpu, cores, phase1Accepted, postmaster !== null)) line(label, value);
  line(
    "  disk waits (WAL flushes) per message",
    walFlushesBefore === null || walFlushesAfter === null
      ? "not measured (this PostgreSQL publishes no WAL flush count)"
      : `≈ ${((walFlushesAfter - walFlushesBefore) / Math.max(1, phase1Accepted)).toFixed(2)} (${walFlushesAfter - walFlushesBefore} flushes of the server's WAL during the chat; commits that wait together share one)`,
  );
  line(
    "reply latency, model time excluded",
    `p50 ${ms(percentile(latencyExModel, 50))}, p95 ${ms(percentile(latencyExModel, 95))} (client-observed, minus the run's ModelCall.latencyMs)`,
  );
  line(
    "reply latency as the customer saw it",
    `p50 ${ms(percentile(latency, 50))}, p95 ${ms(percentile(latency, 95))} (model time included: p50 ${ms(percentile(modelMs, 50))})`,
  );
  line(
    "reply latency in the database, model excl.",
    `p50 ${ms(percentile(serverSide, 50))}, p95 ${ms(percentile(serverSide, 95))} (reply written − message written − model time)`,
  );
  line(
    "database connections (pg_stat_activity)",
    `max ${connections.total} (${connections.active} active at once at most; ${connectionsPhase1.total} during the chat)`,
  );
  line("approvals waiting after phase 2", `${queue.length} of ${askers.length} asked`);
  line(
    "racing decisions",
    `${decisions} in ${ms(raceMs)}: ${f1(rate(decisions, raceMs))} decisions/s — ${[...outcomes].map(([k, n]) => `${n} ${k}`).join(", ")}`,
  );
  line(
    "decision → outcome in the customer's chat",
    `p50 ${ms(
      percentile(
        outcomeSeen.map((t) => t - decidedAt),
        50,
      ),
    )}, p95 ${ms(
      percentile(
        outcomeSeen.map((t) => t - decidedAt),
        95,
      ),
    )} (${outcomeSeen.length} of ${parked.size})`,
  );
  line("errors seen by clients", errors.size ? [...errors].map(([k, n]) => `${n}× ${k}`).join("; ") : "none");
  console.log("  must be exact (from the database):");
  const checks: [string, boolean, string][] = [
    [
      "lost messages",
      exact.lostMessages === 0 && exact.acceptedMissing === 0,
      `${exact.acceptedMissing} of the ${accepted} messages accepted (202) missing, ${exact.lostMessages} of the ${exact.customerMessages} stored unanswered${exact.lostSamples.length ? ` e.g. ${exact.lostSamples.join(", ")}` : ""}; ${exact.customerMessages - (accepted - exact.acceptedMissing)} stored and answered although the client got an error`,
    ],
    [
      "duplicate effects",
      exact.duplicateEffects === 0 && exact.refundMismatches === 0,
      `${exact.duplicateEffects} idempotency keys or tool calls with more than one effect, ${exact.refundMismatches} orders whose refunded total is off (${exact.effects} effects in all)`,
    ],
    [
      "unanswered tool_use",
      exact.unansweredToolUse === 0,
      `${exact.unansweredToolUse} of ${exact.toolUses}${exact.unansweredSamples.length ? ` e.g. ${exact.unansweredSamples.join(", ")}` : ""}`,
    ],
    ["runs left unsettled", exact.unsettledRuns === 0, `${exact.unsettledRuns}`],
    [
      "effects of the racing decisions",
      raceEffects.n === queue.length && raceEffects.refunds === queue.length && queue.length === HANDOFFS,
      `${raceEffects.n} ledger effects and ${raceEffects.refunds} refunds for ${queue.length} handoffs (expected ${HANDOFFS})`,
    ],
    [
      "handoffs decided once",
      raceEffects.approved === queue.length,
      `${raceEffects.approved} of ${queue.length} approved, each by one reviewer`,
    ],
  ];
  for (const [label, ok, detail] of checks) line(`  ${ok ? "✓" : "✗"} ${label}`, detail);
  line(
    `queue first page, ${thousands(q.handoffs)} handoffs`,
    `median ${q.pageMedianMs.toFixed(1)} ms (p95 ${q.pageP95Ms.toFixed(1)}) for queueHandoffs: ${q.pageRows} rows of ${q.handoffs.toLocaleString("en")} (${q.pending.toLocaleString("en")} pending)`,
  );
  line(
    "  its main statement",
    `median ${q.statementMedianMs.toFixed(1)} ms; execution ${q.executionMs.toFixed(2)} ms; plan: ${q.planNodes.join(" → ")}`,
  );
  line(
    "handoff list's first page (CLI, API)",
    `median ${q.listMedianMs.toFixed(1)} ms for 50 of every status, oldest first; execution ${q.listExecutionMs.toFixed(2)} ms; plan: ${q.listPlanNodes.join(" → ")}`,
  );
  line(
    "the worker's read of what is due",
    `median ${q.dueMedianMs.toFixed(1)} ms (before each sleep); execution ${q.dueExecutionMs.toFixed(2)} ms; plan: ${q.duePlanNodes.join(" → ")}`,
  );
  line(
    "  and of the approvals to expire",
    `median ${q.expiryMedianMs.toFixed(1)} ms (a pass a second at most); execution ${q.expiryExecutionMs.toFixed(2)} ms; plan: ${q.expiryPlanNodes.join(" → ")}`,
  );
  const perWidget = (rest.open - rest.closed) / visitors.length;
  line(
    `database at rest, ${visitors.length} widgets open`,
    `${f1(rest.open)} transactions/s; ${f1(rest.closed)} with every widget closed: ${perWidget.toFixed(3)} a second per open widget (its stream reopened every 25 s, its 30-s safety-net fetch)`,
  );
  console.log(`  targets: ≥ 100 customer messages/s and reply p95 ≤ 2 s at 200 visitors; queue first page ≤ 20 ms`);
  log(
    `machine load average now: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  return checks.every(([, ok]) => ok) ? 0 : 1;
}

/**
 * The server's WAL flushes so far: each commit that waits for the disk causes one, unless it waits together with
 * others. PostgreSQL 18 counts them in pg_stat_io, 14–17 in pg_stat_wal; a busy backend publishes its counts every
 * second, so a count taken at a moment is ≈ a second behind. `null` when neither view has them.
 */
async function walFlushes(db: pg.Client): Promise<number | null> {
  for (const counted of [`SELECT sum(fsyncs)::bigint AS n FROM pg_stat_io WHERE object = 'wal'`, `SELECT wal_sync AS n FROM pg_stat_wal`]) {
    const n = await db.query<{ n: string | null }>(counted).then(
      (r) => r.rows[0]?.n ?? null,
      () => null, // the view or column is not on this version: try the other
    );
    if (n !== null) return Number(n);
  }
  return null;
}

/**
 * The database's transactions a second (committed and rolled back: each statement outside a transaction is one) with
 * every visitor's widget open and nobody writing, then with every widget closed — what open widgets cost at rest.
 * PostgreSQL publishes a backend's counts within 10 s of its last transaction, so each window starts after 12 s.
 */
async function databaseAtRest(db: pg.Client, visitors: Visitor[]): Promise<{ open: number; closed: number }> {
  const counted = `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`;
  const transactions = async () => Number((await db.query<{ n: string }>(counted)).rows[0]!.n);
  const window = async () => {
    await sleep(12_000);
    const before = await transactions();
    const started = Date.now();
    await sleep(REST_SECONDS * 1000);
    const after = await transactions();
    return Math.max(0, after - before - 1) / ((Date.now() - started) / 1000); // less the first count's own
  };
  const open = await window();
  for (const v of visitors) v.client.close();
  const closed = await window();
  return { open, closed };
}

/** The chat phase's CPU by process group, in seconds and per customer message, and how busy the machine was. */
function cpuLines(split: CpuSplit, cores: number, messages: number, databaseHere: boolean): Array<[string, string]> {
  if (!split.machine) return [["CPU during the chat", "not measured (no /proc on this system)"]];
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const counted = split.byGroup.reduce((a, g) => a + g.cpuMs, 0);
  const groups = [...split.byGroup, { name: "the rest of the machine", cpuMs: Math.max(0, split.machine.busyMs - counted) }];
  return [
    [
      "CPU during the chat",
      `${seconds(split.machine.busyMs)} busy of ${seconds(split.machine.totalMs)} (${cores} cores × ${(split.wallMs / 1000).toFixed(1)} s, ${Math.round((100 * split.machine.busyMs) / split.machine.totalMs)} % busy): ${groups.map((g) => `${g.name} ${seconds(g.cpuMs)}`).join(", ")}${databaseHere ? "" : " (PostgreSQL is not on this machine)"}`,
    ],
    [
      "  CPU per customer message",
      `${(split.machine.busyMs / Math.max(1, messages)).toFixed(1)} ms: ${groups.map((g) => `${g.name} ${(g.cpuMs / Math.max(1, messages)).toFixed(1)}`).join(", ")}`,
    ],
  ];
}

/** Model time inside each exchange: the ModelCalls of the run that answered it, recorded before the reply was seen. */
async function modelTimePerExchange(db: pg.Client, exchanges: Exchange[]): Promise<number[]> {
  const { rows } = await db.query<{ i: number; model: number }>(
    `SELECT x.i, COALESCE(sum(mc."latencyMs"), 0)::int AS model
       FROM unnest($1::text[], $2::int[], $3::float8[], $4::float8[]) WITH ORDINALITY AS x(conv, seq, sent, seen, i)
       JOIN "Message" m ON m."conversationId" = x.conv AND m.seq = x.seq
       LEFT JOIN "ModelCall" mc ON mc."runId" = m."runId"
             AND mc."createdAt" >= to_timestamp(x.sent / 1000) AND mc."createdAt" <= to_timestamp(x.seen / 1000)
      GROUP BY x.i`,
    [exchanges.map((e) => e.conversationId), exchanges.map((e) => e.seq), exchanges.map((e) => e.sentAt), exchanges.map((e) => e.seenAt)],
  );
  const out = exchanges.map(() => 0);
  for (const r of rows) out[Number(r.i) - 1] = r.model;
  return out;
}

/** The same, measured inside the database: first agent reply's commit time − the customer message's − model time. */
async function serverSideLatency(db: pg.Client, exchanges: Exchange[]): Promise<number[]> {
  const { rows } = await db.query<{ ms: number }>(
    `SELECT GREATEST(0, extract(epoch FROM (r."createdAt" - m."createdAt")) * 1000
              - COALESCE((SELECT sum(mc."latencyMs") FROM "ModelCall" mc
                           WHERE mc."runId" = m."runId" AND mc."createdAt" <= r."createdAt"), 0))::float8 AS ms
       FROM unnest($1::text[], $2::int[]) AS x(conv, seq)
       JOIN "Message" m ON m."conversationId" = x.conv AND m.seq = x.seq
       JOIN LATERAL (SELECT "createdAt" FROM "Message" r WHERE r."conversationId" = m."conversationId" AND r.seq > m.seq
                        AND r."shownToCustomer" AND r.author IN ('AGENT', 'HARNESS') ORDER BY r.seq LIMIT 1) r ON true`,
    [exchanges.map((e) => e.conversationId), exchanges.map((e) => e.seq)],
  );
  return rows.map((r) => r.ms);
}

/** Signed-in visitors get a customer of their own with two damaged orders: $40 (refunded automatically) and $250. */
async function makeVisitors(db: pg.Client): Promise<Visitor[]> {
  const signedIn = Math.max(HANDOFFS, Math.floor(VISITORS * 0.75));
  const tenantId = (await db.query<{ id: string }>(`SELECT id FROM "Tenant" WHERE slug = $1`, [SHOP])).rows[0]!.id;
  await db.query(
    `WITH c AS (
       INSERT INTO "Customer" (id, "tenantId", email, name)
       SELECT 'loadcus' || g, $1, 'load' || g || '@example.com', 'Load Customer ' || g FROM generate_series(1, $2::int) g
       RETURNING id, (substr(id, 8))::int AS g),
     o AS (
       INSERT INTO "Order" (id, "tenantId", "customerId", number, "totalCents", status, note, "shippingAddress", "placedAt")
       SELECT 'load' || size || c.g, $1, c.id, CASE size WHEN 'small' THEN 'L-' || (20000 + c.g) ELSE 'L-' || (10000 + c.g) END,
              CASE size WHEN 'small' THEN 4000 ELSE 25000 END, 'delivered', 'arrived damaged',
              '{"line1":"214 Alder Street","city":"Portland","postalCode":"97204","country":"US"}', now() - interval '10 days'
         FROM c, unnest(ARRAY['small', 'big']) size
       RETURNING id, "totalCents"),
     i AS (
       INSERT INTO "OrderItem" (id, "orderId", sku, name, quantity, "unitPriceCents")
       SELECT 'item' || o.id, o.id, 'BP-A45', 'Alpine 45L backpack', 1, o."totalCents" FROM o)
     INSERT INTO "Shipment" (id, "orderId", carrier, tracking, status)
     SELECT 'ship' || o.id, o.id, 'UPS', '1ZLOAD' || o.id, 'delivered' FROM o`,
    [tenantId, signedIn],
  );
  return Array.from({ length: VISITORS }, (_, i) => {
    const n = i + 1;
    const kind: Kind = n <= signedIn ? "signed-in" : "anonymous";
    return {
      n,
      kind,
      ...(kind === "signed-in" ? { email: `load${n}@example.com`, smallOrder: `L-${20000 + n}`, bigOrder: `L-${10000 + n}` } : {}),
      client: undefined as unknown as WidgetVisitor,
      port: PORTS[i % 2]!,
    };
  });
}

/** The most connections to the load database at any sample (every 200 ms), excluding the sampler's own. */
function sampleConnections(url: string, database: string) {
  const client = new pg.Client({ connectionString: url });
  let peak = { total: 0, active: 0 };
  let stopped = false;
  const loop = (async () => {
    await client.connect();
    while (!stopped) {
      const { rows } = await client.query<{ total: number; active: number }>(
        `SELECT count(*)::int AS total, count(*) FILTER (WHERE state = 'active')::int AS active
           FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [database],
      );
      peak = { total: Math.max(peak.total, rows[0]!.total - 1), active: Math.max(peak.active, rows[0]!.active) }; // −1: the run's own checker
      await sleep(200);
    }
    await client.end();
  })();
  return {
    max: () => ({ ...peak }),
    stop: async () => {
      stopped = true;
      await loop.catch(() => undefined);
    },
  };
}

// Everything started is stopped again: on success, on an error, and on Ctrl-C.
const cleanup: (() => Promise<unknown> | unknown)[] = [];
async function tidyUp(): Promise<void> {
  for (const step of cleanup.reverse()) await Promise.resolve(step()).catch(() => undefined);
  cleanup.length = 0;
  await stopEmbeddedIfOwner({ waitForUsersMs: 10_000 }).catch(() => undefined);
}
let interrupted = false;
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    if (interrupted) return;
    interrupted = true;
    log(`${sig}: stopping every process this run started…`);
    void tidyUp().finally(() => process.exit(130));
  });
}

main()
  .then(async (code) => {
    await tidyUp();
    process.exit(code);
  })
  .catch(async (err) => {
    console.error(
      isEmbeddedUnavailable(err) ? err.message : `[load] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
    await tidyUp();
    process.exit(1);
  });
