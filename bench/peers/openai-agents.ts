/**
 * The scenario of `npm run bench:peers` through the OpenAI Agents SDK (JS) on PostgreSQL, built as its guides build
 * it: an Agent with `tool()`s (the refund with `needsApproval: true`), a Runner with a custom ModelProvider, the
 * conversation history in a `Session` backed by PostgreSQL (the SDK ships only in-memory and OpenAI-hosted
 * sessions; this one follows the shape of the SDK's own Prisma session example: one row per item, appended in one
 * statement), and a paused run stored as `result.state.toString()` in a table, resumed with `RunState.fromString`
 * → `state.approve()` → `run()`. The model is scripted (no network); time inside `getResponse` and inside tool
 * bodies is subtracted by the measurement loop (runner.ts). Tracing is off (it would export to OpenAI).
 * Started by scripts/bench-peers.ts with BENCH_PEER_DATABASE_URL.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  Agent,
  type AgentInputItem,
  type AgentOutputItem,
  type Model,
  type ModelProvider,
  type ModelResponse,
  Runner,
  RunState,
  type Session,
  tool,
  Usage,
} from "@openai/agents";
import pg from "pg";
import { z } from "zod";
import { handleCommand, newClock, type Pause, type ScriptedReply, type SystemUnderTest, timedModelCall, timedToolBody } from "./runner";
import {
  countStatements,
  LOOKUP_ORDER_SQL,
  preparePeerShop,
  REFUND_INPUT,
  REFUND_REQUEST_TEXT,
  REFUND_SQL,
  serveCommands,
} from "./scenario";

const url = process.env.BENCH_PEER_DATABASE_URL;
if (!url) throw new Error("BENCH_PEER_DATABASE_URL is not set (run this through `npm run bench:peers`)");

const statements = countStatements(pg.Client);
const clock = newClock();
const replies: ScriptedReply[] = [];
let callIds = 0;

/** A Model that answers each request with the next scripted reply, as a provider's model adapter would. */
class ScriptedModel implements Model {
  async getResponse(): Promise<ModelResponse> {
    const reply = replies.shift();
    if (!reply) throw new Error("the scripted model has no reply queued");
    const id = ++callIds;
    const output: AgentOutputItem[] =
      "toolCall" in reply
        ? [
            {
              type: "function_call",
              id: `fc_${id}`,
              callId: `call_${id}`,
              name: reply.toolCall.name,
              arguments: JSON.stringify(reply.toolCall.input),
              status: "completed",
            },
          ]
        : [
            {
              type: "message",
              id: `msg_${id}`,
              role: "assistant",
              status: "completed",
              content: [{ type: "output_text", text: reply.text }],
            },
          ];
    return { usage: new Usage(), output, responseId: `resp_${id}` };
  }
  // biome-ignore lint/correctness/useYield: the runner never streams here
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("streaming is not used by this benchmark");
  }
}

/** Times every model request at the Model boundary (where an OpenAI adapter would send HTTP). */
class TimedModel implements Model {
  constructor(private readonly inner: Model) {}
  getResponse(request: Parameters<Model["getResponse"]>[0]) {
    return timedModelCall(clock, () => this.inner.getResponse(request));
  }
  getStreamedResponse(request: Parameters<Model["getStreamedResponse"]>[0]) {
    return this.inner.getStreamedResponse(request);
  }
}

const provider: ModelProvider = { getModel: () => new TimedModel(new ScriptedModel()) };

const SESSION_DDL = `
  CREATE TABLE IF NOT EXISTS agent_sessions (id text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS agent_session_items (
    id bigserial PRIMARY KEY, session_id text NOT NULL REFERENCES agent_sessions(id) ON DELETE CASCADE,
    position int NOT NULL, item jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), UNIQUE (session_id, position)
  );
  CREATE TABLE IF NOT EXISTS agent_paused_runs (
    id uuid PRIMARY KEY, session_id text NOT NULL, call_id text NOT NULL, state text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now()
  );`;

/** The conversation history in PostgreSQL: one row per item, in order. */
class PostgresSession implements Session {
  private created = false;
  constructor(
    private readonly pool: pg.Pool,
    private readonly id: string,
  ) {}
  async getSessionId() {
    if (!this.created) {
      await this.pool.query("INSERT INTO agent_sessions (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", [this.id]);
      this.created = true;
    }
    return this.id;
  }
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    const id = await this.getSessionId();
    const { rows } =
      limit === undefined
        ? await this.pool.query("SELECT item FROM agent_session_items WHERE session_id = $1 ORDER BY position", [id])
        : await this.pool.query(
            "SELECT item FROM (SELECT item, position FROM agent_session_items WHERE session_id = $1 ORDER BY position DESC LIMIT $2) t ORDER BY position",
            [id, limit],
          );
    return rows.map((r) => r.item as AgentInputItem);
  }
  async addItems(items: AgentInputItem[]) {
    if (!items.length) return;
    const id = await this.getSessionId();
    await this.pool.query(
      `INSERT INTO agent_session_items (session_id, position, item)
       SELECT $1, coalesce((SELECT max(position) FROM agent_session_items WHERE session_id = $1), 0) + t.ord, t.item
       FROM unnest($2::jsonb[]) WITH ORDINALITY AS t(item, ord)`,
      [id, items.map((i) => JSON.stringify(i))],
    );
  }
  async popItem() {
    const id = await this.getSessionId();
    const { rows } = await this.pool.query(
      `DELETE FROM agent_session_items WHERE id = (SELECT id FROM agent_session_items WHERE session_id = $1 ORDER BY position DESC LIMIT 1)
       RETURNING item`,
      [id],
    );
    return rows[0]?.item as AgentInputItem | undefined;
  }
  async clearSession() {
    await this.pool.query("DELETE FROM agent_sessions WHERE id = $1", [this.id]);
    this.created = false;
  }
}

/** One server process's worth of the SDK: its pool (sessions, paused runs, the tools' queries), agent and runner. */
function buildServer() {
  const pool = new pg.Pool({ connectionString: url });
  const lookupOrder = tool({
    name: "lookup_order",
    description: "Look up an order by its number",
    parameters: z.object({ order_number: z.string() }),
    async execute({ order_number }) {
      const { rows } = await timedToolBody(clock, () => pool.query(LOOKUP_ORDER_SQL, [order_number]));
      return JSON.stringify(rows[0] ?? { error: `No order ${order_number}` });
    },
  });
  const refundOrder = tool({
    name: "refund_order",
    description: "Refund an order (needs a person's approval)",
    parameters: z.object({ order_number: z.string(), amount_cents: z.number().int(), reason: z.string() }),
    needsApproval: true,
    async execute({ order_number, amount_cents }, _context, details) {
      const { rows } = await timedToolBody(clock, () =>
        pool.query(REFUND_SQL, [order_number, amount_cents, details?.toolCall?.callId ?? null]),
      );
      return JSON.stringify({ status: "refunded", refund_id: rows[0]?.refund_id });
    },
  });
  const agent = new Agent({ name: "Support", instructions: "You help the shop's customers.", tools: [lookupOrder, refundOrder] });
  const runner = new Runner({ modelProvider: provider, tracingDisabled: true });
  return { pool, agent, runner };
}

const admin = new pg.Pool({ connectionString: url, max: 1 });
const servers = [buildServer(), buildServer()];
await admin.query(SESSION_DDL);
await preparePeerShop(admin);

const sut: SystemUnderTest = {
  admin,
  clock,
  statements,
  script: (...r) => void replies.push(...r),
  pendingReplies: () => replies.length,
  dropReplies: () => void replies.splice(0),
  openConversation: async () => randomUUID(),
  async customerTurn(sessionId, text) {
    const { pool, agent, runner } = servers[0]!;
    await runner.run(agent, text, { session: new PostgresSession(pool, sessionId) });
  },
  async parkRefund() {
    const { pool, agent, runner } = servers[0]!;
    const sessionId = randomUUID();
    const result = await runner.run(agent, REFUND_REQUEST_TEXT, { session: new PostgresSession(pool, sessionId) });
    const interruption = result.interruptions[0];
    if (interruption?.rawItem.type !== "function_call") throw new Error("the refund did not pause for approval");
    // Saved where any server process can find it; the pause is what `toString()` gave at this moment.
    const id = randomUUID();
    const state = result.state.toString();
    await pool.query("INSERT INTO agent_paused_runs (id, session_id, call_id, state) VALUES ($1, $2, $3, $4)", [
      id,
      sessionId,
      interruption.rawItem.callId,
      state,
    ]);
    return { id, sessionId, callId: interruption.rawItem.callId, savedState: state };
  },
  async viewPause(pause, connection) {
    const { pool } = servers[connection]!;
    await pool.query("SELECT state FROM agent_paused_runs WHERE id = $1", [pause.id]);
    await pool.query(LOOKUP_ORDER_SQL, [REFUND_INPUT.order_number]);
  },
  async approve(pause: Pause, { connection, from }) {
    const { pool, agent, runner } = servers[connection]!;
    const saved =
      from === "latest"
        ? ((await pool.query("SELECT state FROM agent_paused_runs WHERE id = $1", [pause.id])).rows[0]?.state as string)
        : (pause.savedState as string);
    const state = await RunState.fromString(agent, saved);
    const interruption = state.getInterruptions().find((i) => i.rawItem.type === "function_call" && i.rawItem.callId === pause.callId);
    if (!interruption) return "nothing pending";
    state.approve(interruption);
    const result = await runner.run(agent, state, { session: new PostgresSession(pool, pause.sessionId as string) });
    // The run's latest state replaces the saved one, so a later look finds it finished.
    await pool.query("UPDATE agent_paused_runs SET state = $2, updated_at = now() WHERE id = $1", [pause.id, result.state.toString()]);
    return result.interruptions.length ? "still paused" : "returned";
  },
  async refundsOf(pause) {
    const { rows } = await admin.query("SELECT count(*)::int AS n FROM refunds WHERE tool_call_id = $1", [pause.callId]);
    return rows[0]!.n as number;
  },
};

const version = (name: string) =>
  (JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, import.meta.url), "utf8")) as { version: string }).version;

await serveCommands(
  {
    ready: true,
    system: "OpenAI Agents SDK + Postgres",
    versions: Object.fromEntries(["@openai/agents", "@openai/agents-core", "pg"].map((n) => [n, version(n)])),
    configuration:
      "Runner (custom ModelProvider, tracing off) + a PostgreSQL Session (one row per item, appended in one statement; the SDK saves the turn's items once, when the run ends: nothing of a run in progress is stored); approval = needsApproval, result.state.toString() stored in a table, RunState.fromString → approve → run",
  },
  (command) => handleCommand(sut, command),
);
await Promise.all(servers.map((s) => s.pool.end()));
await admin.end();
process.exit(0);
