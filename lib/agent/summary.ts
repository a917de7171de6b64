// The rolling summary of a conversation's older messages (issue 10.3). Written by CODE from the transcript — what the
// customer said, what the tools did and returned, what the agent answered — never by the model, so it cannot invent or
// drop an action. Each summary folds in the one before it and keeps the most recent items within fixed caps, so its
// size is bounded however long the conversation grows. Customer words stay customer words: they travel framed as
// data (./framing), the records as a support note.
import type Anthropic from "@anthropic-ai/sdk";
import { customerText, harnessNote, readFramed } from "./framing";

type Block = Anthropic.ContentBlockParam;

/** What a summary remembers, newest last. */
export interface SummaryFacts {
  /** what the customer wrote, shortened */
  customer: string[];
  /** calls of tools that change something (refunds, cancellations…) and what they returned — kept longest */
  done?: string[];
  /** other tool calls (look-ups) and what they returned */
  actions: string[];
  /** what the agent answered, shortened */
  replies: string[];
  /** the latest context from the shop (who the customer is) */
  context: string | null;
  /**
   * who verify_customer last verified the customer as (its latest call that succeeded) — never trimmed, as the gates
   * go on treating the customer as verified however many look-ups push the call's own line out of `actions`
   */
  verified?: string | null;
  /** how many messages it covers in all */
  messages: number;
}

const CAPS = { customer: 12, done: 40, actions: 12, replies: 6, chars: 280 };

const shorten = (text: string, max = CAPS.chars) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** A tool call and its result in one line: `refund_order {"order_number":"A-1001",…} → {"status":"refunded",…}`. */
function actionLine(use: Anthropic.ToolUseBlockParam, result: Anthropic.ToolResultBlockParam | undefined): string {
  const input = shorten(JSON.stringify(use.input ?? {}), 160);
  if (!result) return `${use.name} ${input} → (no result)`;
  const content = typeof result.content === "string" ? result.content : JSON.stringify(result.content ?? "");
  return `${use.name} ${input} → ${result.is_error ? "ERROR " : ""}${shorten(content, 200)}`;
}

/** Who a verify_customer call verified the customer as, when its result says it did (else null). */
function verifiedAs(use: Anthropic.ToolUseBlockParam, result: Anthropic.ToolResultBlockParam | undefined): string | null {
  if (use.name !== "verify_customer" || !result || result.is_error) return null;
  const text =
    typeof result.content === "string" ? result.content : (result.content ?? []).map((b) => (b.type === "text" ? b.text : "")).join("");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof body !== "object" || body === null || (body as { status?: unknown }).status !== "verified") return null;
  const { customer_id, name, email, level, can_change_address } = body as Record<string, unknown>;
  return shorten(JSON.stringify({ customer_id, name, email, level, can_change_address }), 400);
}

/**
 * The facts of `rows` (in order), folded into `previous`. `changesSomething(name)`: whether a tool of that name acts on
 * the world (its calls are listed as done) or only reads (listed as actions) — the tool registry's `sideEffect`.
 */
export function summaryFacts(
  previous: SummaryFacts | null,
  rows: Array<{ role: string; content: unknown }>,
  changesSomething: (toolName: string) => boolean,
): SummaryFacts {
  const facts: SummaryFacts = previous
    ? {
        ...previous,
        customer: [...previous.customer],
        done: [...(previous.done ?? [])],
        actions: [...previous.actions],
        replies: [...previous.replies],
        verified: previous.verified ?? null,
      }
    : { customer: [], done: [], actions: [], replies: [], context: null, verified: null, messages: 0 };
  const results = new Map<string, Anthropic.ToolResultBlockParam>();
  for (const row of rows)
    for (const b of row.content as Block[]) if (b.type === "tool_result") results.set(b.tool_use_id, b as Anthropic.ToolResultBlockParam);
  for (const row of rows) {
    facts.messages++;
    for (const b of row.content as Block[]) {
      if (row.role === "assistant" && b.type === "tool_use") {
        (changesSomething(b.name) ? facts.done! : facts.actions).push(actionLine(b, results.get(b.id)));
        facts.verified = verifiedAs(b, results.get(b.id)) ?? facts.verified;
      } else if (row.role === "assistant" && b.type === "text" && b.text.trim()) facts.replies.push(shorten(b.text));
      else if (row.role === "user" && b.type === "text") {
        const framed = readFramed(b.text);
        if (framed.kind === "customer" || framed.kind === "unframed") facts.customer.push(shorten(framed.text));
        else if (framed.kind === "context") facts.context = shorten(framed.text, 400);
        // support notes (a stop-check correction, an earlier summary) are the support system's own bookkeeping
      }
    }
  }
  facts.customer = facts.customer.slice(-CAPS.customer);
  facts.done = facts.done!.slice(-CAPS.done);
  facts.actions = facts.actions.slice(-CAPS.actions);
  facts.replies = facts.replies.slice(-CAPS.replies);
  return facts;
}

/**
 * The summary as it is sent: a support note with the records, and the customer's words framed as data. Within
 * `maxChars` when given: the oldest items are left out first (the note says how many).
 */
export function summaryBlocks(facts: SummaryFacts, maxChars = Number.POSITIVE_INFINITY): Block[] {
  const kept: Kept = {
    customer: [...facts.customer],
    done: [...(facts.done ?? [])],
    actions: [...facts.actions],
    replies: [...facts.replies],
  };
  let blocks = render(facts, kept);
  // Drop the oldest items of the longest list until it fits (a list keeps its newest item); what changed something
  // (refunds, cancellations) goes last.
  while (JSON.stringify(blocks).length > maxChars) {
    const longest = (["actions", "customer", "replies"] as const).reduce((a, b) => (kept[b].length > kept[a].length ? b : a));
    if (kept[longest].length > 1) kept[longest].shift();
    else if (kept.done.length > 1) kept.done.shift();
    else break;
    blocks = render(facts, kept);
  }
  return blocks;
}

type Kept = { customer: string[]; done: string[]; actions: string[]; replies: string[] };

function render(facts: SummaryFacts, kept: Kept): Block[] {
  const left = (all: string[] | undefined, some: string[]) =>
    (all?.length ?? 0) > some.length ? `; ${all!.length - some.length} older ones left out` : "";
  const lines = [
    `Summary of the ${facts.messages} earlier messages of this conversation, written by the support system from its records (the most recent items are kept). Only what the tool results below show was done.`,
    ...(facts.context ? [`Shop context: ${facts.context}`] : []),
    ...(facts.verified ? [`The customer was verified by verify_customer as: ${facts.verified}`] : []),
    `Changes made by tools, with their results (oldest first${left(facts.done, kept.done)}):`,
    ...(kept.done.length ? kept.done.map((a) => `- ${a}`) : ["- none"]),
    `Look-ups and their results (oldest first${left(facts.actions, kept.actions)}):`,
    ...(kept.actions.length ? kept.actions.map((a) => `- ${a}`) : ["- none"]),
    "What the agent answered (oldest first):",
    ...(kept.replies.length ? kept.replies.map((r) => `- ${r}`) : ["- nothing yet"]),
  ];
  const blocks: Block[] = [{ type: "text", text: harnessNote(lines.join("\n")) }];
  if (kept.customer.length)
    blocks.push({
      type: "text",
      text: customerText(`Earlier messages from the customer (oldest first, shortened):\n${kept.customer.map((c) => `- ${c}`).join("\n")}`),
    });
  return blocks;
}
