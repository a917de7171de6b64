import type Anthropic from "@anthropic-ai/sdk";
import type { PrismaTx, Json } from "@/lib/db/prisma-types";
import { publishEvent } from "@/lib/events";

export type ContentBlock = Anthropic.ContentBlockParam;
export type MessageParam = Anthropic.MessageParam;

export interface AppendMessage {
  tenantId: string;
  conversationId: string;
  runId?: string | null;
  role: "user" | "assistant";
  author: "CUSTOMER" | "AGENT" | "HARNESS" | "STAFF";
  content: ContentBlock[];
  inTranscript?: boolean;
  shownToCustomer?: boolean;
  displayText?: string | null;
  pendingDelivery?: boolean;
  staffId?: string | null;
}

/**
 * Appends one message row. The conversation's counter is incremented in the same transaction, which both
 * numbers the message and serialises concurrent appends to one conversation. Rows are never rewritten.
 */
export async function appendMessage(tx: PrismaTx, m: AppendMessage) {
  const { messageCount: seq } = await tx.conversation.update({
    where: { id: m.conversationId },
    data: { messageCount: { increment: 1 } },
    select: { messageCount: true },
  });
  const row = await tx.message.create({
    data: {
      tenantId: m.tenantId,
      conversationId: m.conversationId,
      runId: m.runId ?? null,
      seq,
      role: m.role,
      author: m.author,
      content: m.content as unknown as Json,
      inTranscript: m.inTranscript ?? true,
      shownToCustomer: m.shownToCustomer ?? false,
      displayText: m.displayText ?? null,
      pendingDelivery: m.pendingDelivery ?? false,
      staffId: m.staffId ?? null,
    },
  });
  if (row.shownToCustomer) {
    await publishEvent(tx, { tenantId: m.tenantId, conversationId: m.conversationId, type: "message.created", data: { seq, author: m.author } });
  }
  return row;
}

/**
 * The messages array as the model sees it: transcript rows in order, consecutive messages of one role merged
 * into one (the API would merge them too; merging here keeps tool_result-first ordering visible and checkable).
 */
export function buildModelMessages(rows: Array<{ role: string; content: unknown }>): MessageParam[] {
  const out: MessageParam[] = [];
  for (const row of rows) {
    const blocks = row.content as ContentBlock[];
    const last = out[out.length - 1];
    if (last && last.role === row.role) {
      last.content = [...(last.content as ContentBlock[]), ...blocks];
    } else {
      out.push({ role: row.role as "user" | "assistant", content: [...blocks] });
    }
  }
  return out;
}

/** Transcript rows of a conversation (what the model sees), optionally only those after a seq. */
export async function loadTranscriptRows(db: PrismaTx, conversationId: string, afterSeq = 0) {
  return db.message.findMany({
    where: { conversationId, inTranscript: true, seq: { gt: afterSeq } },
    orderBy: { seq: "asc" },
    select: { seq: true, role: true, content: true, author: true, runId: true },
  });
}

/**
 * Checks the pairing contract on a messages array: every tool_use is answered in the next user message by a
 * tool_result with its id, results come before any text. Used by tests and as a last guard before a request.
 */
export function transcriptViolations(messages: MessageParam[]): string[] {
  const problems: string[] = [];
  if (messages[0] && messages[0].role !== "user") problems.push("first message is not from the user");
  messages.forEach((m, i) => {
    if (m.role !== "assistant" || typeof m.content === "string") return;
    const ids = m.content.filter((b) => b.type === "tool_use").map((b) => (b as Anthropic.ToolUseBlockParam).id);
    if (!ids.length) return;
    const next = messages[i + 1];
    if (!next) {
      problems.push(`message ${i}: tool_use ${ids.join(",")} has no result yet (last message)`);
      return;
    }
    const blocks = typeof next.content === "string" ? [] : next.content;
    const resultIds = blocks.filter((b) => b.type === "tool_result").map((b) => (b as Anthropic.ToolResultBlockParam).tool_use_id);
    for (const id of ids) if (!resultIds.includes(id)) problems.push(`message ${i}: tool_use ${id} has no tool_result`);
    const firstText = blocks.findIndex((b) => b.type !== "tool_result");
    const lastResult = blocks.map((b) => b.type).lastIndexOf("tool_result");
    if (firstText !== -1 && firstText < lastResult) problems.push(`message ${i + 1}: text before a tool_result`);
  });
  return problems;
}
