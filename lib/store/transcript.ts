// The conversation's row and its messages. A statement changes the Conversation row at most once (PostgreSQL
// cannot update one row twice in a statement), so everything a step does to it — messages appended (the counter
// numbers them), the run letting go of it, its status, queued customer text taken — is ONE update here. The row
// is the serialisation point of a conversation: concurrent appends wait for its lock, and what the update returns
// is the row as it is at that moment (never a stale snapshot).
import type Anthropic from "@anthropic-ai/sdk";
import { sql } from "kysely";
import type { ConversationStatus, Store } from "@/lib/db/kysely";
import { addEvent } from "./events";
import { json, type Sql, type Statement, type Values } from "./statement";

export type ContentBlock = Anthropic.ContentBlockParam;
export type MessageParam = Anthropic.MessageParam;

export interface NewMessage {
  tenantId: string;
  conversationId: string;
  runId?: string | null | Sql;
  role: "user" | "assistant";
  author: "CUSTOMER" | "AGENT" | "HARNESS" | "STAFF";
  /** content blocks as sent to / received from the model, or an SQL expression building them */
  content: ContentBlock[] | Sql;
  inTranscript?: boolean;
  /** shown to the customer: a value, or an expression over the conversation's CTE (e.g. "unless a person owns it") */
  shownToCustomer?: boolean | Sql;
  displayText?: string | null | Sql;
  pendingDelivery?: boolean | Sql;
  staffId?: string | null;
}

export interface ConversationChange {
  conversationId: string;
  /** plain statements: the caller's tenant, put in the where (another tenant's id matches nothing) */
  tenantId?: string;
  messages?: NewMessage[];
  /** the run ends: it lets go of the conversation — or hands it to `followUpRunId` when customer text is queued */
  releaseRun?: { runId: string; followUpRunId: string };
  status?: ConversationStatus | Sql;
  /** a CTE of queued messages taken by this statement: the queued counter goes down by as many */
  takeQueued?: string;
  /** more columns to set */
  set?: Values<"Conversation">;
  /** sources and condition of the update (beyond the statement's guard) */
  from?: string[];
  where?: Sql<boolean>;
}

const isSql = (v: unknown): v is Sql => typeof v === "object" && v !== null && "toOperationNode" in v;

/**
 * Adds the conversation's update (CTE `name`, returning "messageCount", status, "queuedCount", "activeRunId" and
 * "followUp") and its messages (`${name}_m0`, `${name}_m1`, …, numbered in order) with a live event for each message
 * the customer sees. Returns the messages' CTE names.
 */
export function changeConversation(s: Statement, c: ConversationChange, name = "conv"): string[] {
  const messages = c.messages ?? [];
  const set: Values<"Conversation"> = { ...c.set, updatedAt: sql`now()` };
  if (messages.length) set.messageCount = sql`"messageCount" + ${messages.length}::int`;
  if (c.releaseRun) {
    const { runId, followUpRunId } = c.releaseRun;
    // Text the customer sent while the run was busy starts the next run at once (unless a person owns it) — what is
    // still queued after this statement, not what it takes.
    const left = c.takeQueued ? sql`"queuedCount" - (SELECT count(*)::int FROM ${sql.raw(c.takeQueued)})` : sql`"queuedCount"`;
    set.activeRunId = sql`CASE WHEN "activeRunId" = ${runId} THEN
      (CASE WHEN ${left} > 0 AND status <> 'human' THEN ${followUpRunId} ELSE NULL END) ELSE "activeRunId" END`;
  }
  if (c.takeQueued) set.queuedCount = sql`greatest(0, "queuedCount" - (SELECT count(*)::int FROM ${sql.raw(c.takeQueued)}))`;
  if (c.status) set.status = isSql(c.status) ? c.status : sql`${c.status}::"ConversationStatus"`;
  const followUp = c.releaseRun ? sql`("activeRunId" IS NOT DISTINCT FROM ${c.releaseRun.followUpRunId}::text)` : sql`false`;
  const where = sql<boolean>`"Conversation".id = ${c.conversationId}${c.tenantId ? sql` AND "Conversation"."tenantId" = ${c.tenantId}` : sql``}${
    c.where ? sql` AND ${c.where}` : sql``
  }`;
  s.update(name, "Conversation", set, where, {
    from: c.from,
    returning: sql`"Conversation"."messageCount", "Conversation".status, "Conversation"."queuedCount", "Conversation"."activeRunId", ${followUp} AS "followUp"`,
  });
  return messages.map((m, i) => {
    const row = `${name}_m${i}`;
    s.insert(
      row,
      "Message",
      {
        id: sql`gen_random_uuid()::text`,
        tenantId: m.tenantId,
        conversationId: m.conversationId,
        runId: m.runId ?? null,
        seq: sql`${sql.raw(name)}."messageCount" - ${messages.length - 1 - i}::int`,
        role: sql`${m.role}::"MessageRole"`,
        author: sql`${m.author}::"MessageAuthor"`,
        content: isSql(m.content) ? m.content : json(m.content),
        inTranscript: m.inTranscript ?? true,
        shownToCustomer: m.shownToCustomer ?? false,
        displayText: m.displayText ?? null,
        pendingDelivery: m.pendingDelivery ?? false,
        staffId: m.staffId ?? null,
      },
      { from: [name], returning: sql`seq, content, "shownToCustomer", "inTranscript"` },
    );
    if (m.shownToCustomer !== false && m.shownToCustomer !== undefined) {
      addEvent(
        s,
        `${row}_ev`,
        {
          tenantId: m.tenantId,
          conversationId: m.conversationId,
          type: "message.created",
          data: sql`jsonb_build_object('seq', ${sql.raw(row)}.seq, 'author', ${m.author}::text)`,
        },
        { from: [row], where: sql<boolean>`${sql.raw(row)}."shownToCustomer"` },
      );
    }
    return row;
  });
}

/**
 * Takes the text queued while a run was busy (CTE `name`, returning seq and content, in order): the customer's and the
 * words of a person who owned the conversation (lib/conversations/takeover) — or, `onlyStaff`, the person's alone —
 * under the messages' row locks: they now belong to `runId` (none: a hand-back delivers them) and are delivered by the
 * message this statement appends (see `withQueuedText`). Pair it with `changeConversation({ takeQueued: name })`. At
 * most `maxBytes` of them are taken (and the oldest one anyway when `atLeastOne`): the rest stay queued for the next
 * turn, so a flood of queued text never becomes one oversized request.
 */
export function takeQueuedText(
  s: Statement,
  name: string,
  conversationId: string,
  runId: string | null,
  maxBytes: number,
  atLeastOne = true,
  /** only the words of people on the support side (STAFF), leaving the customer's text queued */
  onlyStaff = false,
): void {
  const whose = onlyStaff ? sql` AND author = 'STAFF'` : sql``;
  s.update(
    name,
    "Message",
    { pendingDelivery: false, runId },
    sql<boolean>`"Message".id IN (
      SELECT id FROM (
        SELECT id, row_number() OVER w AS n, sum(octet_length(content::text)) OVER w AS bytes
        FROM (SELECT id, seq, content FROM "Message" WHERE "conversationId" = ${conversationId} AND "pendingDelivery"${whose} ORDER BY seq FOR UPDATE) locked
        WINDOW w AS (ORDER BY seq)
      ) running
      WHERE (n = 1 AND ${atLeastOne}::boolean) OR bytes <= ${maxBytes})`,
    { returning: sql`"Message".seq, "Message".content` },
  );
}

/** Whether the text waiting for delivery is a person's words alone (none of the customer's). */
export async function queuedIsStaffOnly(db: Store, conversationId: string): Promise<boolean> {
  const row = await db
    .selectFrom("Message")
    .select([sql<number>`count(*)::int`.as("queued"), sql<number>`(count(*) FILTER (WHERE author <> 'STAFF'))::int`.as("others")])
    .where("conversationId", "=", conversationId)
    .where("pendingDelivery", "=", true)
    .executeTakeFirst();
  return !!row && row.queued > 0 && row.others === 0;
}

/**
 * The queued messages of `takeQueuedText`'s CTE, appended after `blocks` in order — their content exactly as intake
 * framed it for the model (customer text as data: lib/agent/framing).
 */
export function withQueuedText(blocks: ContentBlock[] | Sql, queued: string): Sql {
  const head = isSql(blocks) ? blocks : json(blocks);
  return sql`${head} || coalesce((SELECT jsonb_agg(b.block ORDER BY q.seq, b.ord) FROM ${sql.raw(queued)} q,
    jsonb_array_elements(q.content) WITH ORDINALITY AS b(block, ord)), '[]'::jsonb)`;
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the transcript

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
 * Takes the store, never a transaction: it caches what it reads, so it must only ever see committed rows.
 */
export async function loadTranscript(db: Store, conversationId: string): Promise<TranscriptRow[]> {
  const read = transcriptRead(db, conversationId);
  return read.take((await read.query.execute()) as TranscriptRow[]);
}

/**
 * `loadTranscript` in two halves, for a caller that sends the read with other statements (after a COMMIT, see
 * lib/db/kysely `commitThenRead`): the query of what this process has not seen, and `take`, which adds its rows to
 * what the process knows and returns the whole transcript. Committed rows only, as for `loadTranscript`.
 */
export function transcriptRead(db: Store, conversationId: string) {
  const known = cache.get(conversationId) ?? { rows: [], through: 0 };
  const query = db
    .selectFrom("Message")
    .select(["seq", "role", "content", "author", "runId"])
    .where("conversationId", "=", conversationId)
    .where("inTranscript", "=", true)
    .where("seq", ">", known.through)
    .orderBy("seq");
  const take = (fresh: TranscriptRow[]): TranscriptRow[] => {
    // A concurrent caller may have extended the entry meanwhile: keep only what is still new.
    const news = fresh.filter((r) => r.seq > known.through);
    if (news.length) {
      known.rows.push(...news);
      known.through = news[news.length - 1]!.seq;
    }
    remember(conversationId, known);
    return [...known.rows]; // the cache's entry grows in place: callers get their own copy
  };
  return { query, take };
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

const isBlankText = (b: ContentBlock) => b.type === "text" && !b.text.trim();

/**
 * A model's content as the transcript keeps it: without blank text blocks, which the provider refuses in a request
 * (as it refuses a message left with no content at all — a caller stores nothing then).
 */
export function withoutBlankText(content: ContentBlock[]): ContentBlock[] {
  return content.some(isBlankText) ? content.filter((b) => !isBlankText(b)) : content;
}

/** The ids of every tool_use block in `messages` (transcript rows or a messages array). */
export function toolUseIdsIn(messages: Array<{ content: unknown }>): Set<string> {
  const ids = new Set<string>();
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content as ContentBlock[]) if (b.type === "tool_use") ids.add(b.id);
  }
  return ids;
}

/**
 * The messages array as the model sees it: transcript rows in order, consecutive messages of one role merged
 * into one (the API would merge them too; merging here keeps tool_result-first ordering visible and checkable).
 * Blank text blocks, and a message left empty without them, are not sent: the provider refuses them (rows stored
 * before the runtime kept them out would otherwise break every later request of their conversation).
 */
export function buildModelMessages(rows: Array<{ role: string; content: unknown }>): MessageParam[] {
  const out: MessageParam[] = [];
  for (const row of rows) {
    const blocks = withoutBlankText(row.content as ContentBlock[]);
    if (!blocks.length) continue;
    const last = out[out.length - 1];
    if (last && last.role === row.role) {
      last.content = [...(last.content as ContentBlock[]), ...blocks];
    } else {
      out.push({ role: row.role as "user" | "assistant", content: [...blocks] });
    }
  }
  return out;
}

/**
 * Checks the pairing contract on a messages array: every tool_use is answered in the next user message by a
 * tool_result with its id, results come before any text, tool_use ids are unique; and what the provider refuses in
 * any message: no content, a blank text block. Used by tests and as a last guard before a request.
 */
export function transcriptViolations(messages: MessageParam[]): string[] {
  const problems: string[] = [];
  if (messages[0] && messages[0].role !== "user") problems.push("first message is not from the user");
  const seen = new Set<string>();
  messages.forEach((m, i) => {
    if (typeof m.content === "string") return;
    if (!m.content.length) problems.push(`message ${i}: no content`);
    if (m.content.some(isBlankText)) problems.push(`message ${i}: a blank text block`);
    if (m.role !== "assistant") return;
    const ids = m.content.filter((b) => b.type === "tool_use").map((b) => (b as Anthropic.ToolUseBlockParam).id);
    for (const id of ids) {
      if (seen.has(id)) problems.push(`message ${i}: tool_use id ${id} is used twice`);
      seen.add(id);
    }
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
