// Rolling summaries of long conversations (lib/agent/summary, lib/runtime/context): written once per cut, read by
// whichever process sends the next request. A summary is derived data — rebuilt the same way from the transcript —
// so writing it outside the step's statement is safe: two processes that cut at the same message write one row.
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Store } from "@/lib/db/kysely";
import type { SummaryFacts } from "@/lib/agent/summary";
import type { ContentBlock } from "./transcript";

export interface ContextSummary {
  id: string;
  throughSeq: number;
  blocks: ContentBlock[];
  facts: SummaryFacts;
  tokens: number;
}

interface StoredContent {
  blocks: ContentBlock[];
  facts: SummaryFacts;
}

// Summaries never change once written, so the newest one a process has seen per conversation is kept; a newer one
// written by another process is found by the next read (it only ever starts after the cached one).
const latest = new Map<string, ContextSummary>();
const CACHE_CONVERSATIONS = 500;

function remember(conversationId: string, s: ContextSummary) {
  const known = latest.get(conversationId);
  if (known && known.throughSeq >= s.throughSeq) return;
  latest.delete(conversationId);
  latest.set(conversationId, s);
  if (latest.size > CACHE_CONVERSATIONS) latest.delete(latest.keys().next().value!);
}

/** The newest summary this process has seen for a conversation (no read), if it ends at or before `notAfterSeq`. */
export function knownSummary(conversationId: string, notAfterSeq: number): ContextSummary | null {
  const known = latest.get(conversationId);
  return known && known.throughSeq <= notAfterSeq ? known : null;
}

/** A stored ContextSummary row as a summary. */
export function summaryOf(row: { id: string; throughSeq: number; content: unknown; tokens: number }): ContextSummary {
  const content = row.content as StoredContent;
  return { id: row.id, throughSeq: row.throughSeq, blocks: content.blocks, facts: content.facts, tokens: row.tokens };
}

/** The newest summary of a conversation, or null. One indexed read, skipped when nothing can be newer. */
export async function latestSummary(db: Store, conversationId: string, notAfterSeq: number): Promise<ContextSummary | null> {
  const known = latest.get(conversationId) ?? null;
  const row = await db
    .selectFrom("ContextSummary")
    .select(["id", "throughSeq", "content", "tokens"])
    .where("conversationId", "=", conversationId)
    .where("throughSeq", ">", known?.throughSeq ?? 0)
    .where("throughSeq", "<=", notAfterSeq)
    .orderBy("throughSeq", "desc")
    .limit(1)
    .executeTakeFirst();
  if (!row) return known && known.throughSeq <= notAfterSeq ? known : null;
  const summary = summaryOf(row);
  remember(conversationId, summary);
  return summary;
}

/** Stores a new summary (or finds the one another process stored for the same cut) and returns it. */
export async function addSummary(
  db: Store,
  a: { tenantId: string; conversationId: string; throughSeq: number; blocks: ContentBlock[]; facts: SummaryFacts; tokens: number },
): Promise<ContextSummary> {
  const content: StoredContent = { blocks: a.blocks, facts: a.facts };
  const row = await sql<{ id: string; content: StoredContent; tokens: number }>`
    WITH ins AS (
      INSERT INTO "ContextSummary" (id, "tenantId", "conversationId", "throughSeq", content, tokens)
      VALUES (${randomUUID()}, ${a.tenantId}, ${a.conversationId}, ${a.throughSeq}, ${JSON.stringify(content)}::jsonb, ${a.tokens})
      ON CONFLICT ("conversationId", "throughSeq") DO NOTHING
      RETURNING id, content, tokens)
    SELECT id, content, tokens FROM ins
    UNION ALL
    SELECT id, content, tokens FROM "ContextSummary" WHERE "conversationId" = ${a.conversationId} AND "throughSeq" = ${a.throughSeq}
    LIMIT 1`.execute(db);
  const got = row.rows[0]!;
  const summary = { id: got.id, throughSeq: a.throughSeq, blocks: got.content.blocks, facts: got.content.facts, tokens: got.tokens };
  remember(a.conversationId, summary);
  return summary;
}
