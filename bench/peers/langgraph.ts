/**
 * The scenario of `npm run bench:peers` through LangGraph.js with its PostgreSQL checkpointer, built as its docs
 * build a tool-calling agent: a StateGraph over MessagesAnnotation, an `agent` node calling a chat model, the
 * prebuilt ToolNode, `toolsCondition`; compiled with `PostgresSaver` (`setup()` once, default durability). The
 * approval is an `interrupt()` inside the refund tool, resumed with `new Command({ resume })`.
 * The chat model is a scripted BaseChatModel (no network); time inside `model.invoke` and inside tool bodies is
 * subtracted by the measurement loop (runner.ts). Started by scripts/bench-peers.ts with BENCH_PEER_DATABASE_URL.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { BaseChatModel, type BindToolsInput } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { tool } from "@langchain/core/tools";
import { Command, END, interrupt, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
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

/** A chat model that answers each call with the next scripted reply, as a provider's chat model would. */
class ScriptedChatModel extends BaseChatModel {
  _llmType() {
    return "scripted";
  }
  // The scripted replies name the tools themselves; a provider's model would send these definitions along.
  override bindTools(_tools: BindToolsInput[]) {
    return this;
  }
  async _generate(_messages: BaseMessage[]): Promise<ChatResult> {
    const reply = replies.shift();
    if (!reply) throw new Error("the scripted model has no reply queued");
    const message =
      "toolCall" in reply
        ? new AIMessage({
            content: "",
            tool_calls: [{ id: `call_${++callIds}`, name: reply.toolCall.name, args: reply.toolCall.input, type: "tool_call" }],
          })
        : new AIMessage({ content: reply.text });
    return { generations: [{ text: typeof message.content === "string" ? message.content : "", message }] };
  }
}

/** One server process's worth of LangGraph: its pool for the tools, its checkpointer (own pool), its compiled graph. */
function buildGraph(checkpointer: PostgresSaver, shop: pg.Pool) {
  const model = new ScriptedChatModel({});
  const lookupOrder = tool(
    async ({ order_number }) => {
      const { rows } = await timedToolBody(clock, () => shop.query(LOOKUP_ORDER_SQL, [order_number]));
      return JSON.stringify(rows[0] ?? { error: `No order ${order_number}` });
    },
    { name: "lookup_order", description: "Look up an order by its number", schema: z.object({ order_number: z.string() }) },
  );
  const refundOrder = tool(
    async ({ order_number, amount_cents }, config) => {
      // The documented pattern: pause inside the tool; on resume the tool runs again from its start and
      // interrupt() returns the reviewer's answer.
      const decision = interrupt({ action: "refund_order", order_number, amount_cents }) as { type: string };
      if (decision.type !== "approve") return "The refund was not approved.";
      const { rows } = await timedToolBody(clock, () => shop.query(REFUND_SQL, [order_number, amount_cents, config.toolCall?.id ?? null]));
      return JSON.stringify({ status: "refunded", refund_id: rows[0]?.refund_id });
    },
    {
      name: "refund_order",
      description: "Refund an order (needs a person's approval)",
      schema: z.object({ order_number: z.string(), amount_cents: z.number().int(), reason: z.string() }),
    },
  );
  const tools = [lookupOrder, refundOrder];
  const bound = model.bindTools(tools);
  const agent = async (state: typeof MessagesAnnotation.State) => {
    const reply = await timedModelCall(clock, () => bound.invoke(state.messages));
    return { messages: [reply] };
  };
  return new StateGraph(MessagesAnnotation)
    .addNode("agent", agent)
    .addNode("tools", new ToolNode(tools))
    .addEdge(START, "agent")
    .addConditionalEdges("agent", toolsCondition, ["tools", END])
    .addEdge("tools", "agent")
    .compile({ checkpointer });
}

const admin = new pg.Pool({ connectionString: url, max: 1 });
// Two "server processes": each with its own checkpointer pool and shop pool (PostgresSaver's own default pool size).
const servers = [0, 1].map(() => {
  const checkpointer = PostgresSaver.fromConnString(url);
  const shop = new pg.Pool({ connectionString: url });
  return { checkpointer, shop, graph: buildGraph(checkpointer, shop) };
});
await servers[0]!.checkpointer.setup();
await preparePeerShop(admin);

const threadConfig = (threadId: string) => ({ configurable: { thread_id: threadId } });

const sut: SystemUnderTest = {
  admin,
  clock,
  statements,
  script: (...r) => void replies.push(...r),
  pendingReplies: () => replies.length,
  dropReplies: () => void replies.splice(0),
  openConversation: async () => randomUUID(),
  async customerTurn(threadId, text) {
    await servers[0]!.graph.invoke({ messages: [new HumanMessage(text)] }, threadConfig(threadId));
  },
  async parkRefund() {
    const threadId = randomUUID();
    const { graph } = servers[0]!;
    const result = await graph.invoke({ messages: [new HumanMessage(REFUND_REQUEST_TEXT)] }, threadConfig(threadId));
    const pending = (result as { __interrupt__?: Array<{ id?: string }> }).__interrupt__;
    if (!pending?.length) throw new Error("the refund did not pause for approval");
    // The saved pause: the thread's checkpoint at the interrupt, as a reviewer's screen would have loaded it.
    const saved = await graph.getState(threadConfig(threadId));
    const proposal = (saved.values as typeof MessagesAnnotation.State).messages.at(-1) as AIMessage;
    return {
      threadId,
      checkpointId: saved.config.configurable?.checkpoint_id as string,
      toolCallId: proposal.tool_calls?.[0]?.id ?? null,
    };
  },
  async viewPause(pause, connection) {
    const { graph, shop } = servers[connection]!;
    await graph.getState(threadConfig(pause.threadId as string));
    await shop.query(LOOKUP_ORDER_SQL, [REFUND_INPUT.order_number]);
  },
  async approve(pause: Pause, { connection, from }) {
    // The docs' resume: the thread id (its latest checkpoint); or the checkpoint saved at the pause, addressed by id.
    const config =
      from === "latest"
        ? threadConfig(pause.threadId as string)
        : { configurable: { thread_id: pause.threadId as string, checkpoint_id: pause.checkpointId as string } };
    const result = await servers[connection]!.graph.invoke(new Command({ resume: { type: "approve" } }), config);
    return (result as { __interrupt__?: unknown[] }).__interrupt__?.length ? "still paused" : "returned";
  },
  async refundsOf(pause) {
    const { rows } = await admin.query("SELECT count(*)::int AS n FROM refunds WHERE tool_call_id = $1", [pause.toolCallId]);
    return rows[0]!.n as number;
  },
};

const version = (name: string) =>
  (JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, import.meta.url), "utf8")) as { version: string }).version;

await serveCommands(
  {
    ready: true,
    system: "LangGraph.js + PostgresSaver",
    versions: Object.fromEntries(
      ["@langchain/langgraph", "@langchain/langgraph-checkpoint-postgres", "@langchain/langgraph-checkpoint", "@langchain/core", "pg"].map(
        (n) => [n, version(n)],
      ),
    ),
    configuration:
      'StateGraph(MessagesAnnotation) + ToolNode, PostgresSaver.fromConnString + setup(), default durability ("async": each step\'s checkpoint is written while the next step runs; invoke() awaits them all); approval = interrupt() in the tool, resumed with Command({ resume })',
  },
  (command) => handleCommand(sut, command),
);
await Promise.all(servers.flatMap((s) => [s.checkpointer.end(), s.shop.end()]));
await admin.end();
process.exit(0);
