/**
 * `npm run bench:peers`: one scripted customer conversation through this product, LangGraph.js + PostgresSaver and
 * the OpenAI Agents SDK + Postgres, in the same run on the same PostgreSQL server (the embedded one, or
 * DATABASE_URL's), each system in a database of its own. Prints, side by side with ratios against this product:
 *   - harness time per customer turn around customer turn 10 and turn 200 (model and tool-body time subtracted);
 *   - approve → next model request (the refund committed before the request);
 *   - statements, rows and bytes written per customer turn;
 *   - refunds made when one approval is approved twice, when the saved pause is resumed twice, and when two
 *     approvals race.
 * The peers live in bench/peers/ with their own package.json (the product's dependencies stay clean); each runs in a
 * process of its own (bench/peers/langgraph.ts, bench/peers/openai-agents.ts) driven over stdin/stdout, while this
 * product runs in this process. The measurement loop is shared (bench/peers/runner.ts); only one system runs at a
 * time, and the systems take turns every 10 customer turns (in a rotating order), so a busy moment of the machine is
 * not charged to one system.
 */
import "./env-first"; // first: a bad variable stops here, with what to fix
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { Pause, ScriptedReply, SystemUnderTest } from "../bench/peers/runner";
import { handleCommand, newClock, timedModelCall, timedProviderCall } from "../bench/peers/runner";
import {
  type ApprovalSample,
  countStatements,
  median,
  percentile,
  type ProbeResult,
  REFUND_REQUEST_TEXT,
  type RunnerCommand,
  type RunnerHello,
  type RunnerReply,
  type TurnSample,
} from "../bench/peers/scenario";
import { machineHypervisor } from "./machine-speed";

process.env.SUPPORT_DB_NAME = process.env.SUPPORT_BENCH_PEERS_DB ?? "support_bench_peers";
process.env.SUPPORT_SKIP_SEED = "1";

const LATE_TURN = Number(process.env.BENCH_PEERS_LATE_TURN ?? 200); // the second window is around this customer turn
const EARLY = [1, 20] as const; // "around turn 10"
const LATE = [LATE_TURN - 9, LATE_TURN + 10] as const;
const TURNS = LATE[1]; // customer turns per measured conversation
const WARMUP_TURNS = Number(process.env.BENCH_PEERS_WARMUP_TURNS ?? 20);
const ROUNDS = Number(process.env.BENCH_PEERS_ROUNDS ?? 3);
const APPROVALS = Number(process.env.BENCH_PEERS_APPROVALS ?? 30);
// Approvals before the measured ones, for every system alike, printed apart (cold): PostgreSQL plans a statement
// afresh on each of its first five executions on a connection, and the JIT has not yet seen the approve path — a
// server that has approved before has paid that (npm run bench warms its approvals the same way).
const WARMUP_APPROVALS = Number(process.env.BENCH_PEERS_WARMUP_APPROVALS ?? 30);
if (LATE[0] <= EARLY[1]) throw new Error("BENCH_PEERS_LATE_TURN must be above 30");

const PEERS_DIR = path.resolve("bench/peers");
if (!existsSync(path.join(PEERS_DIR, "node_modules")))
  throw new Error("bench/peers is not installed: run `npm ci --prefix bench/peers` (npm run bench:peers does it on first use)");

const { resetDatabase } = await import("@/lib/db/reset");
const { prepareDatabase } = await import("@/lib/setup/prepare");
const { stopEmbeddedIfOwner } = await import("@/lib/db/server");

await resetDatabase();
const { url } = await prepareDatabase();
const statements = countStatements(pg.Client); // the product's pg: Prisma's adapter and lib/db/sql both end here

/** A database of its own on the same server for each peer, created empty. */
async function freshDatabase(name: string) {
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const db = new URL(url);
  db.pathname = `/${name}`;
  return db.toString();
}

// ---------------------------------------------------------------------------------------------------------------
// This product's side: the runtime's own entry points — intake (receiveCustomerMessage), advance
// (advanceConversationFrom with the lease taken at intake), decide and resume (resumeRun) — as the widget's request
// handler and the approve action call them. Keep it in this one function so it follows the runtime's changes.
// ---------------------------------------------------------------------------------------------------------------
async function productUnderTest(databaseUrl: string) {
  const { createPrisma } = await import("@/lib/db/client");
  const { seedDemo } = await import("@/lib/setup/seed");
  const { createModelClient } = await import("@/lib/model/client");
  const { createOfflineFetch, OfflineScript } = await import("@/lib/model/offline");
  const { say } = await import("@/lib/operator/commands");
  const { receiveCustomerMessage } = await import("@/lib/conversations/intake");
  const { resumeRun } = await import("@/lib/runtime/resume");
  const { advanceConversationFrom, claimFor } = await import("@/lib/runtime/advance");
  type ModelClient = import("@/lib/model/types").ModelClient;
  type RuntimeDeps = import("@/lib/runtime/deps").RuntimeDeps;

  const clock = newClock();
  // The offline model under the real SDK client, in this process like the peers' scripted models; each request
  // takes the next scripted reply. Everything inside `send` (the SDK building and parsing the request, the offline
  // model) is model time. Its script keeps no copies of past requests (whole conversations, kept for tests to read):
  // here they would weigh on the harness's heap, and the peers' models keep nothing.
  const script = new (class extends OfflineScript {
    override record() {}
  })();
  const inner = createModelClient({ maxRetries: 0, fetch: createOfflineFetch({ script }) });
  const model: ModelClient = {
    mode: inner.mode,
    model: inner.model,
    send: (req, opts) => timedModelCall(clock, () => inner.send(req, opts)),
    countTokens: (req) => timedProviderCall(clock, () => inner.countTokens(req)),
  };
  const metrics = {
    get toolMs() {
      return clock.toolMs;
    },
    set toolMs(ms: number) {
      clock.toolMs = ms;
    },
  };
  // Two "server processes": each its own pool (the second one is for the racing approval).
  const connections = [createPrisma(databaseUrl, { max: 4 }), createPrisma(databaseUrl, { max: 4 })] as const;
  const deps: RuntimeDeps[] = connections.map((db, i) => ({ db, model, workerId: `bench-peers-${i}`, leaseMs: 60_000, metrics }));
  const db = connections[0];
  await seedDemo(db);
  const acme = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  const raj = await db.staffUser.findUniqueOrThrow({ where: { email: "raj@acme.test" } });
  const admin = new pg.Pool({ connectionString: databaseUrl, max: 1 });

  const refundsOfA1002 = async () => {
    const { rows } = await admin.query(
      `SELECT count(*)::int AS n FROM "Refund" r JOIN "Order" o ON o.id = r."orderId" WHERE o."tenantId" = $1 AND o.number = 'A-1002'`,
      [acme.id],
    );
    return rows[0].n as number;
  };

  /** The reviewer's approve action: the decision (bound to the handoff's version), then the run resumes here. */
  async function approveAndResume(pause: Pause, connection: 0 | 1) {
    const { outcome, advanced } = await resumeRun(
      deps[connection]!,
      { tenantId: acme.id, staffId: raj.id },
      { handoffId: pause.handoffId, decision: "approve", version: pause.version },
    );
    if (outcome.kind === "awaiting_second_approval") return "awaiting a second approver";
    return advanced ? `approved, run ${advanced.phase}` : `${outcome.kind}, not resumed here`;
  }

  const sut: SystemUnderTest = {
    admin,
    clock,
    statements,
    script: (...replies: ScriptedReply[]) =>
      void script.push(
        ...replies.map((r) =>
          "toolCall" in r
            ? { reply: { content: [{ type: "tool_use" as const, ...r.toolCall }], stop_reason: "tool_use" } }
            : { reply: { content: [{ type: "text" as const, text: r.text }], stop_reason: "end_turn" } },
        ),
      ),
    pendingReplies: () => script.pending,
    dropReplies: () => {
      while (script.take());
    },
    async openConversation() {
      // A signed-in customer (the shop vouched for Dana), as the widget opens it; the greeting is not measured.
      script.push({ reply: { content: [{ type: "text", text: "Hello! How can I help?" }], stop_reason: "end_turn" } });
      return (await say(deps[0]!, { tenant: "acme", customerEmail: "dana@example.com", text: "hello" })).conversationId;
    },
    async customerTurn(conversationId, text) {
      // The widget's request: intake takes the run's lease, then the same request advances it until the run ends.
      const claim = claimFor(deps[0]!);
      const intake = await receiveCustomerMessage(db, { tenantId: acme.id, conversationId, text, model: model.model, claimFor: claim });
      if (intake.kind !== "started") throw new Error(`expected a run, got ${intake.kind}`);
      const result = await advanceConversationFrom(deps[0]!, intake.runId, { claimedAs: claim, run: intake.run });
      if (result.phase !== "COMPLETED") throw new Error(`expected the run to complete, got ${result.phase}`);
    },
    async parkRefund() {
      // Each sample refunds the same order: give its money back first so the gates see the same facts every time.
      await db.order.updateMany({ where: { tenantId: acme.id, number: "A-1002" }, data: { refundedCents: 0 } });
      const refundsBefore = await refundsOfA1002();
      const out = await say(deps[0]!, { tenant: "acme", customerEmail: "dana@example.com", text: REFUND_REQUEST_TEXT });
      const handoff = out.handoffs[0];
      if (!handoff || out.phase !== "WAITING_FOR_APPROVAL") throw new Error(`the refund did not park (phase ${out.phase})`);
      return { handoffId: handoff.id, version: handoff.version, runId: out.runId, refundsBefore, decided: false };
    },
    async viewPause(pause, connection) {
      await connections[connection].handoff.findFirst({ where: { id: pause.handoffId as string, tenantId: acme.id } });
    },
    async approve(pause, { connection, from }) {
      if (from === "latest") return approveAndResume(pause, connection);
      // The saved pause resumed again: the resume of run X delivered a second time (as a worker would get it).
      if (!pause.decided) {
        pause.decided = true;
        return approveAndResume(pause, connection);
      }
      const result = await advanceConversationFrom(deps[connection]!, pause.runId as string);
      return result.claimed ? `resumed again, run ${result.phase}` : "resumed again: nothing to resume";
    },
    async refundsOf(pause) {
      return (await refundsOfA1002()) - (pause.refundsBefore as number);
    },
  };
  const close = async () => {
    await Promise.all([...connections.map((c) => c.$disconnect()), admin.end()]);
  };
  return { sut, close };
}

// ---------------------------------------------------------------------------------------------------------------
// The peers: each a runner process in bench/peers, driven one command at a time.
// ---------------------------------------------------------------------------------------------------------------
interface System {
  key: string;
  name: string;
  versions: Record<string, string>;
  configuration: string;
  send(command: RunnerCommand): Promise<RunnerReply>;
  close(): Promise<void>;
}

async function startPeer(key: string, file: string, database: string): Promise<System> {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", file], {
    cwd: PEERS_DIR,
    env: { ...process.env, BENCH_PEER_DATABASE_URL: await freshDatabase(database) },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stderr.on("data", (chunk) => process.stderr.write(`[${key}] ${chunk}`));
  const lines: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  let exited: Error | null = null;
  let buffered = "";
  child.stdout.on("data", (chunk) => {
    buffered += String(chunk);
    for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      const next = waiting.shift();
      if (next) next(line);
      else lines.push(line);
    }
  });
  const exitedPromise = new Promise<never>((_, reject) =>
    child.once("exit", (code) => {
      exited = new Error(`the ${key} runner exited (${code})`);
      reject(exited);
    }),
  );
  exitedPromise.catch(() => {});
  const nextLine = () => {
    if (exited) return Promise.reject(exited);
    const line = lines.shift();
    return Promise.race([
      line !== undefined ? Promise.resolve(line) : new Promise<string>((resolve) => waiting.push(resolve)),
      exitedPromise,
    ]);
  };
  const hello = JSON.parse(await nextLine()) as RunnerHello;
  return {
    key,
    name: hello.system,
    versions: hello.versions,
    configuration: hello.configuration,
    async send(command) {
      child.stdin.write(`${JSON.stringify(command)}\n`);
      const reply = JSON.parse(await nextLine()) as RunnerReply;
      if ("error" in reply) throw new Error(`${key}: ${reply.error}`);
      return reply;
    },
    async close() {
      child.stdin.write(`${JSON.stringify({ cmd: "exit" })}\n`);
      await exitedPromise.catch(() => {});
    },
  };
}

async function startProduct(): Promise<System> {
  const { sut, close } = await productUnderTest(url);
  const root = (name: string) => (JSON.parse(readFileSync(`node_modules/${name}/package.json`, "utf8")) as { version: string }).version;
  return {
    key: "ours",
    name: "this product",
    versions: Object.fromEntries(["@prisma/client", "@prisma/adapter-pg", "pg", "@anthropic-ai/sdk"].map((n) => [n, root(n)])),
    configuration:
      "the runtime as the widget and the console call it (receiveCustomerMessage → advanceConversationFrom; resumeRun), the offline model under the real Anthropic SDK client; each step committed before the next model request",
    async send(command) {
      const reply = await handleCommand(sut, command);
      if (!reply) throw new Error("unexpected exit");
      return reply;
    },
    close,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The run.
// ---------------------------------------------------------------------------------------------------------------
const load0 = os.loadavg();
const serverInfo = await (async () => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const show = async (name: string) => (await client.query(`SHOW ${name}`)).rows[0][name] as string;
  const info = {
    version: await show("server_version"),
    fsync: await show("fsync"),
    synchronousCommit: await show("synchronous_commit"),
    walSync: await show("wal_sync_method"),
  };
  await client.end();
  return info;
})();

// BENCH_PEERS_ONLY=langgraph (or openai-agents) runs this product and that one peer only.
const only = process.env.BENCH_PEERS_ONLY;
if (only && only !== "langgraph" && only !== "openai-agents") throw new Error("BENCH_PEERS_ONLY must be langgraph or openai-agents");
const systems: System[] = [await startProduct()];
if (!only || only === "langgraph") systems.push(await startPeer("langgraph", "langgraph.ts", `${process.env.SUPPORT_DB_NAME}_langgraph`));
if (!only || only === "openai-agents")
  systems.push(await startPeer("openai-agents", "openai-agents.ts", `${process.env.SUPPORT_DB_NAME}_openai_agents`));
const progress = (text: string) => process.stderr.write(`${text}\n`);

const samples = new Map<string, TurnSample[]>(systems.map((s) => [s.key, []]));
const approvals = new Map<string, ApprovalSample[]>();
const coldApprovals = new Map<string, ApprovalSample[]>();
const probes = new Map<string, ProbeResult>();
const BLOCK = 10; // customer turns a system takes before the next one takes its turn
const conversationOf = async (s: System) => {
  const reply = await s.send({ cmd: "open" });
  if (!("conversationId" in reply)) throw new Error(`${s.key}: no conversation`);
  return reply.conversationId;
};
try {
  for (const s of systems) {
    progress(`warm-up (a conversation of ${WARMUP_TURNS} customer turns, ${WARMUP_APPROVALS} approvals): ${s.name}`);
    await s.send({ cmd: "turns", conversationId: await conversationOf(s), from: 0, count: WARMUP_TURNS, measure: false });
    if (WARMUP_APPROVALS > 0) {
      const cold = await s.send({ cmd: "approvals", samples: WARMUP_APPROVALS });
      if ("approvals" in cold) coldApprovals.set(s.key, cold.approvals);
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    progress(`round ${round + 1}/${ROUNDS}: ${TURNS} customer turns through each system, ${BLOCK} at a time, taking turns`);
    const conversations = new Map<string, string>();
    for (const s of systems) conversations.set(s.key, await conversationOf(s));
    for (let from = 0; from < TURNS; from += BLOCK) {
      for (let k = 0; k < systems.length; k++) {
        const s = systems[(round + from / BLOCK + k) % systems.length]!;
        const count = Math.min(BLOCK, TURNS - from);
        const reply = await s.send({ cmd: "turns", conversationId: conversations.get(s.key)!, from, count, measure: true });
        if ("samples" in reply) samples.get(s.key)!.push(...reply.samples);
      }
    }
  }
  progress(`approvals (${APPROVALS} per system, 5 at a time, taking turns) and exactly-once probes`);
  for (let done = 0; done < APPROVALS; done += 5)
    for (const s of systems) {
      const a = await s.send({ cmd: "approvals", samples: Math.min(5, APPROVALS - done) });
      if ("approvals" in a) approvals.set(s.key, [...(approvals.get(s.key) ?? []), ...a.approvals]);
    }
  for (const s of systems) {
    const p = await s.send({ cmd: "probes" });
    if ("probes" in p) probes.set(s.key, p.probes);
  }
} finally {
  await Promise.all(systems.map((s) => s.close()));
}
const load1 = os.loadavg();

// ---------------------------------------------------------------------------------------------------------------
// The report.
// ---------------------------------------------------------------------------------------------------------------
const ours = systems[0]!;
const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "–");
const ratio = (value: number, base: number) => (base > 0 ? `×${(value / base).toFixed(1)}` : "–");
const windowOf = (key: string, [lo, hi]: readonly [number, number]) => samples.get(key)!.filter((x) => x.turn >= lo && x.turn <= hi);

function table(title: string, head: string[], rows: string[][]) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`;
  console.log(`\n${title}`);
  console.log(line(head));
  console.log(`| ${widths.map((w, i) => (i === 0 ? "-".repeat(w) : `${"-".repeat(w - 1)}:`)).join(" | ")} |`);
  for (const r of rows) console.log(line(r));
}

function harnessTable(label: string, window: readonly [number, number]) {
  const base = median(windowOf(ours.key, window).map((x) => x.harnessMs));
  table(
    `Harness ms per customer turn ${label} (customer turns ${window[0]}–${window[1]} of ${ROUNDS} conversations; model and tool-body time subtracted)`,
    ["system", "samples", "median", "p95", "model ms (excl.)", "tool ms (excl.)", "vs this product"],
    systems.map((s) => {
      const xs = windowOf(s.key, window);
      const m = median(xs.map((x) => x.harnessMs));
      return [
        s.name,
        String(xs.length),
        fmt(m),
        fmt(
          percentile(
            xs.map((x) => x.harnessMs),
            95,
          ),
        ),
        fmt(median(xs.map((x) => x.modelMs))),
        fmt(median(xs.map((x) => x.toolMs))),
        s === ours ? "×1.0" : ratio(m, base),
      ];
    }),
  );
}

console.log(
  `\nbench:peers — one scripted conversation through three systems on ${process.env.DATABASE_URL ? "the DATABASE_URL server" : "the embedded PostgreSQL"} (PostgreSQL ${serverInfo.version}; fsync=${serverInfo.fsync}, synchronous_commit=${serverInfo.synchronousCommit}, wal_sync_method=${serverInfo.walSync} for everyone)`,
);
console.log(
  `Machine: Node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim() ?? "?"}), load average ${load0.map((l) => l.toFixed(2)).join(" ")} at start, ${load1.map((l) => l.toFixed(2)).join(" ")} at end, hypervisor ${machineHypervisor()}`,
);
console.log(
  "Ratios (\"vs this product\"): the peer's figure ÷ this product's — ×2.0 means the peer takes twice as long or writes twice as much.",
);
console.log(
  `Scenario: each customer turn = model proposes lookup_order → the tool runs a SELECT → model replies (2 model calls); a warm-up per system (a ${WARMUP_TURNS}-turn conversation, ${WARMUP_APPROVALS} approvals), then ${ROUNDS} measured conversations of ${TURNS} customer turns each, the systems taking turns every ${BLOCK} customer turns`,
);
for (const s of systems) {
  console.log(
    `  ${s.name}: ${Object.entries(s.versions)
      .map(([n, v]) => `${n} ${v}`)
      .join(", ")}`,
  );
  console.log(`    ${s.configuration}`);
}

harnessTable("around turn 10", EARLY);
harnessTable(`around turn ${LATE_TURN}`, LATE);

{
  const base = median(approvals.get(ours.key)!.map((a) => a.decisionToRequestMs));
  table(
    `Approve → next model request, ms (${APPROVALS} approvals each, a fresh conversation each; the refund committed before the request)`,
    ["system", "median", "p95", `cold: the first ${WARMUP_APPROVALS}, median`, "statements", "refunds per approval", "vs this product"],
    systems.map((s) => {
      const xs = approvals.get(s.key)!;
      const m = median(xs.map((a) => a.decisionToRequestMs));
      const cold = coldApprovals.get(s.key) ?? [];
      return [
        s.name,
        fmt(m),
        fmt(
          percentile(
            xs.map((a) => a.decisionToRequestMs),
            95,
          ),
        ),
        fmt(median(cold.map((a) => a.decisionToRequestMs))),
        fmt(median(xs.map((a) => a.statements)), 0),
        [...new Set(xs.map((a) => a.refunds))].join(", "),
        s === ours ? "×1.0" : ratio(m, base),
      ];
    }),
  );
}

{
  const cell = (key: string, window: readonly [number, number], pick: (x: TurnSample) => number) => median(windowOf(key, window).map(pick));
  const rows: string[][] = [];
  for (const s of systems)
    for (const window of [EARLY, LATE]) {
      const at = `${s.name}, turn ${window === EARLY ? 10 : LATE_TURN}`;
      const wal = cell(s.key, window, (x) => x.walBytes);
      rows.push([
        at,
        fmt(
          cell(s.key, window, (x) => x.statements),
          0,
        ),
        fmt(
          cell(s.key, window, (x) => x.commits),
          0,
        ),
        fmt(
          cell(s.key, window, (x) => x.rows),
          0,
        ),
        fmt(
          cell(s.key, window, (x) => x.rowBytes),
          0,
        ),
        fmt(wal, 0),
        s === ours
          ? "×1.0"
          : ratio(
              wal,
              cell(ours.key, window, (x) => x.walBytes),
            ),
      ]);
    }
  table(
    "Written per customer turn (medians over the same windows)",
    ["system, where", "statements", "commits", "row versions", "row bytes", "WAL bytes", "WAL vs this product"],
    rows,
  );
  console.log(
    "  statements: query() calls that reached a pg connection during the turn (each a round trip; BEGIN and COMMIT count; the tool's SELECT counts);",
  );
  console.log("  commits: write transactions the turn committed (transaction ids assigned), each one waiting for its WAL flush;");
  console.log(
    "  row versions / row bytes: rows inserted or updated by the turn in the system's database (xmin since the turn began), stored size (pg_column_size);",
  );
  console.log("  WAL bytes: what the server wrote to its write-ahead log during the turn (indexes, TOAST and page images included).");
}

table(
  "Exactly once: refunds rows after one $250 approval",
  ["system", "approved twice", "saved pause resumed twice", "two approvals racing"],
  systems.map((s) => {
    const p = probes.get(s.key)!;
    return [s.name, String(p.approvedTwice.refunds), String(p.resumedTwice.refunds), String(p.racing.refunds)];
  }),
);
console.log(
  "  approved twice: the approve handler run again after the first finished (a double click), each reading the latest saved state;",
);
console.log(
  "  saved pause resumed twice: the state saved when the run paused resumed a second time (a redelivered resume job; LangGraph: the pause's checkpoint_id; Agents SDK: the stored RunState string; this product: the run's resume);",
);
console.log("  racing: two approve handlers at once, each on its own connections, both after loading the approval.");
for (const s of systems) {
  const p = probes.get(s.key)!;
  console.log(`  ${s.name}: ${p.approvedTwice.detail} | ${p.resumedTwice.detail} | ${p.racing.detail}`);
}

await stopEmbeddedIfOwner();
process.exit(0);
