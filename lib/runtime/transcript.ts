import type Anthropic from "@anthropic-ai/sdk";
import { Prisma, type PrismaClient } from "@/lib/db/prisma-types";
import { fastSql, sqlOf, type Db } from "@/lib/db/sql";
import { randomUUID } from "node:crypto";

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

/** A message to append as part of a larger statement; `content` replaces its JSON content with an SQL expression. */
export interface MessageToAppend {
  id: string;
  message: AppendMessage;
  content?: Prisma.Sql;
}

/**
 * The CTEs appending messages in order, for statements that append as part of a larger write: `c` (the
 * conversation's counter, advanced once for all), one row CTE per message — `msg` for the last, `msg0`, `msg1`…
 * before it — and `ev` (the live-update events for what the customer sees). `from` makes the append conditional
 * (e.g. on the lease: `FROM lease`).
 */
export function appendMessagesCtes(messages: MessageToAppend[], opts: { from?: Prisma.Sql } = {}): Prisma.Sql {
  const first = messages[0]!.message;
  const name = (i: number) => Prisma.raw(i === messages.length - 1 ? "msg" : `msg${i}`);
  const rows = messages.map(({ id, message: m, content }, i) => Prisma.sql`
    ${name(i)} AS (
      INSERT INTO "Message" (id, "tenantId", "conversationId", "runId", seq, role, author, content, "inTranscript", "shownToCustomer", "displayText", "pendingDelivery", "staffId")
      SELECT ${id}, ${m.tenantId}, ${m.conversationId}, ${m.runId ?? null}, c."messageCount" - ${messages.length - 1 - i}::int, ${m.role}::"MessageRole", ${m.author}::"MessageAuthor",
             ${content ?? Prisma.sql`${JSON.stringify(m.content)}::jsonb`}, ${m.inTranscript ?? true}, ${m.shownToCustomer ?? false}, ${m.displayText ?? null}, ${m.pendingDelivery ?? false}, ${m.staffId ?? null}
      FROM c RETURNING seq, content
    )`);
  const shown = messages.flatMap(({ message: m }, i) => (m.shownToCustomer ? [Prisma.sql`
      SELECT ${m.tenantId}, ${m.conversationId}, 'message.created', jsonb_build_object('seq', ${name(i)}.seq, 'author', ${m.author}::text) FROM ${name(i)}`] : []));
  return Prisma.sql`
    c AS (
      UPDATE "Conversation" SET "messageCount" = "messageCount" + ${messages.length}::int, "updatedAt" = now()
      ${opts.from ? Prisma.sql`FROM ${opts.from}` : Prisma.empty}
      WHERE "Conversation".id = ${first.conversationId} RETURNING "messageCount"
    ), ${Prisma.join(rows, ", ")}${shown.length ? Prisma.sql`, ev AS (
      INSERT INTO "Event" ("tenantId", "conversationId", type, data) ${Prisma.join(shown, " UNION ALL ")}
    )` : Prisma.empty}`;
}

/** The CTEs appending one message (see appendMessagesCtes): `c`, `msg`, and `ev` if the customer sees it. */
export function appendMessageCtes(id: string, m: AppendMessage, opts: { from?: Prisma.Sql; content?: Prisma.Sql } = {}): Prisma.Sql {
  return appendMessagesCtes([{ id, message: m, content: opts.content }], { from: opts.from });
}

/**
 * Appends one message row in ONE statement: the conversation's counter is incremented and the row inserted with
 * that number (and, for what the customer sees, the live-update event) — which also serialises concurrent appends
 * to one conversation, because the counter's row lock is held until commit. Rows are never rewritten.
 */
export async function appendMessage(tx: Db, m: AppendMessage): Promise<{ id: string; seq: number }> {
  const id = randomUUID();
  const rows = await sqlOf(tx).query<{ seq: number }>(Prisma.sql`WITH ${appendMessageCtes(id, m)} SELECT seq FROM msg`);
  if (!rows[0]) throw new Error(`conversation ${m.conversationId} not found`);
  return { id, seq: rows[0].seq };
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

export interface TranscriptRow {
  seq: number;
  role: "user" | "assistant";
  content: unknown;
  author: string;
  runId: string | null;
}

// Transcript rows are append-only and numbered in commit order (the counter's row lock), so a process may keep
// what it read and fetch only rows after the last seq it has. `through`: every message up to that seq is known
// (transcript rows kept, others skipped). Bounded; correctness never depends on it.
interface CachedTranscript {
  rows: TranscriptRow[];
  through: number;
}
const cache = new Map<string, CachedTranscript>();
const CACHE_CONVERSATIONS = 500;

function remember(conversationId: string, entry: CachedTranscript) {
  cache.delete(conversationId);
  cache.set(conversationId, entry); // most recently used last
  if (cache.size > CACHE_CONVERSATIONS) cache.delete(cache.keys().next().value!);
}

/**
 * Transcript rows of a conversation (what the model sees), in order; reads only what this process has not seen.
 * Takes the client, not a transaction: it caches what it reads, so it must only ever see committed rows.
 */
export async function loadTranscriptRows(db: PrismaClient, conversationId: string): Promise<TranscriptRow[]> {
  const known = cache.get(conversationId) ?? { rows: [], through: 0 };
  const fresh = await fastSql(db).query<TranscriptRow>(Prisma.sql`
    SELECT seq, role::text AS role, content, author::text AS author, "runId" FROM "Message"
    WHERE "conversationId" = ${conversationId} AND "inTranscript" AND seq > ${known.through} ORDER BY seq`);
  // A concurrent caller may have extended the entry meanwhile: keep only what is still new.
  const news = fresh.filter((r) => r.seq > known.through);
  if (news.length) {
    known.rows.push(...news);
    known.through = news[news.length - 1]!.seq;
  }
  remember(conversationId, known);
  return [...known.rows]; // the cache's entry grows in place: callers get their own copy
}

/**
 * Records a message this process has just committed. When it directly follows what the cache knows (no one else
 * wrote in between), the cache stays complete through it; otherwise the next read fetches what is missing.
 */
export function noteCommitted(conversationId: string, row: TranscriptRow, inTranscript = true): void {
  const known = cache.get(conversationId);
  if (!known || row.seq !== known.through + 1) return;
  if (inTranscript) known.rows.push(row);
  known.through = row.seq;
  remember(conversationId, known);
}

/** The cached transcript if this process knows every message up to `seq` (else null: read it). */
export function transcriptKnownThrough(conversationId: string, seq: number): TranscriptRow[] | null {
  const known = cache.get(conversationId);
  return known && known.through === seq ? [...known.rows] : null;
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
