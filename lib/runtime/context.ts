// Conversations of any length at a flat cost (issue 10.3). Before each request the run's messages are fitted under
// the context budget (SUPPORT_CONTEXT_BUDGET_TOKENS): when they would not fit, the older messages are folded into a
// rolling summary written by code from the transcript (lib/agent/summary) and only the recent ones are sent verbatim.
// A cut is only ever made at a customer message that answers no tool call, so every tool_use/tool_result pair that is
// sent is sent whole, and never inside the current run (the model always sees everything its own run did).
//
// Counting: the provider's usage says exactly how many tokens the last request had, so each conversation keeps its
// tokens-per-character ratio; a request clearly under the budget by that ratio is sent as it is, one near or over it
// is counted exactly (Claude's count_tokens; the offline model's own count) before deciding.
import { type SummaryFacts, summaryBlocks, summaryFacts } from "@/lib/agent/summary";
import type { Store } from "@/lib/db/kysely";
import { setting } from "@/lib/env";
import type { ModelRequest } from "@/lib/model/types";
import { addSummary, type ContextSummary, knownSummary, latestSummary } from "@/lib/store/context-summaries";
import { buildModelMessages, type ContentBlock, type MessageParam, type TranscriptRow } from "@/lib/store/transcript";
import { getTool } from "@/lib/tools/registry";
import type { RuntimeDeps } from "./deps";
import type { RunState } from "./run-state";

/** Whether a tool acts on the world; an unknown one is kept in a summary as if it had changed something. */
const changesSomething = (name: string) => getTool(name)?.sideEffect ?? true;

/** The model's own limit: above it a request fails whatever the budget says. */
const CONTEXT_WINDOW_TOKENS = 200_000;
/**
 * Of what the budget leaves after the system prompt and tools: after a cut, the verbatim part aims at half (so cuts
 * are rare: one per half a budget of chat) and the summary may take a quarter.
 */
const AFTER_CUT_SHARE = 0.5;
const SUMMARY_SHARE = 0.25;
/** Below this share of the budget by the estimate, a request is sent without an exact count. */
const NO_COUNT_SHARE = 0.85;
/** Tokens per character before a conversation's first response says better (high on purpose: it errs to counting). */
const DEFAULT_RATIO = 0.4;

export const contextBudget = () => setting("SUPPORT_CONTEXT_BUDGET_TOKENS");

/**
 * Customer text queued while the model was busy is bundled into one turn only up to this many bytes (as many bytes as
 * the budget has tokens: at 3–4 bytes a token, a quarter to a third of it); the rest waits for the next turn.
 */
export const queuedBytesBudget = () => contextBudget();

export interface FittedContext {
  kind: "fitted";
  request: ModelRequest;
  /** the first transcript seq sent verbatim (null: the whole transcript) */
  fromSeq: number | null;
  summaryId: string | null;
  /** the exact count, when one was made */
  requestTokens: number | null;
  /** characters of the request, to learn the ratio from the response's usage */
  chars: number;
}

export type ContextFit = FittedContext | { kind: "too_long"; tokens: number };

// Tokens per character, per conversation, from the last response's usage (bounded; a miss only means a count).
const ratios = new Map<string, number>();

/** Learns a conversation's tokens-per-character ratio from what the provider reported for a request. */
export function noteRequestSize(conversationId: string, chars: number, tokens: number): void {
  if (chars <= 0 || tokens <= 0) return;
  ratios.delete(conversationId);
  ratios.set(conversationId, tokens / chars);
  if (ratios.size > 2000) ratios.delete(ratios.keys().next().value!);
}

const charsOf = (value: unknown) => JSON.stringify(value).length;

// The size of a stored message's content, the tools or a summary, measured once per object: the transcript's rows
// (kept by the process's cache) and the tools list (per policy) are the same objects from turn to turn, so a turn
// costs what it added, not a pass over the whole conversation.
const sizes = new WeakMap<object, number>();
function sizeOf(value: unknown): number {
  if (typeof value !== "object" || value === null) return charsOf(value ?? null);
  let n = sizes.get(value);
  if (n === undefined) {
    n = charsOf(value);
    sizes.set(value, n);
  }
  return n;
}
/** Per message of the request: its role and the JSON around its content. */
const MESSAGE_OVERHEAD_CHARS = 32;

/**
 * The request for the next model turn of `state`, under the budget: the transcript as it is when it fits, else the
 * newest rolling summary (written now if a new cut is needed) followed by the messages after it.
 */
export async function fitContext(
  deps: RuntimeDeps,
  db: Store,
  state: RunState,
  rows: TranscriptRow[],
  base: Omit<ModelRequest, "messages" | "summaryBlocks">,
): Promise<ContextFit> {
  const budget = contextBudget();
  const conversationId = state.ref.conversationId;
  const ratio = ratios.get(conversationId) ?? DEFAULT_RATIO;
  const prefixChars = sizeOf(base.system) + sizeOf(base.tools);
  const lastSeq = rows[rows.length - 1]?.seq ?? 0;

  // The whole transcript when it clearly fits (no read at all: a short conversation pays nothing for this).
  const whole = build(base, rows, null, prefixChars);
  if (whole.chars * ratio <= budget * NO_COUNT_SHARE) return whole;
  // The summary this process last used or wrote, else the newest in the database. (One another process wrote since
  // would only have folded more: going on from this one is never wrong — a cut at the same message finds that row —
  // and it saves a read per turn.)
  let summary = lastSeq > 0 ? (knownSummary(conversationId, lastSeq) ?? (await latestSummary(db, conversationId, lastSeq))) : null;
  let fitted = summary ? build(base, rows, summary, prefixChars) : whole;
  if (fitted.chars * ratio <= budget * NO_COUNT_SHARE) return fitted;
  let tokens = await deps.model.countTokens(fitted.request);
  if (tokens <= budget) return { ...fitted, requestTokens: tokens };

  // Over the budget: cut. Where the verbatim part may start: a customer message answering no tool call, after the
  // current summary and not after the run's own first message.
  const runStart = rows.find((r) => r.runId === state.ref.id)?.seq ?? lastSeq;
  const after = summary?.throughSeq ?? 0;
  const cuts = rows.filter((r) => r.seq > after && r.seq <= runStart && r.role === "user" && !answersToolCall(r));
  // The earliest cut whose verbatim part is within its share (by the measured ratio), else the latest possible.
  const measured = tokens / fitted.chars;
  const suffixChars = suffixSizes(rows);
  const room = Math.max(0, budget - prefixChars * measured);
  const target = room * AFTER_CUT_SHARE;
  const cut = cuts.find((r) => suffixChars.get(r.seq)! * measured <= target) ?? cuts[cuts.length - 1];
  if (cut && cut.seq > (rows.find((r) => r.seq > after)?.seq ?? Number.POSITIVE_INFINITY)) {
    const folded = rows.filter((r) => r.seq > after && r.seq < cut.seq);
    const facts: SummaryFacts = summaryFacts(summary?.facts ?? null, folded, changesSomething);
    const blocks = summaryBlocks(facts, (room * SUMMARY_SHARE) / measured);
    summary = await addSummary(db, {
      tenantId: state.ref.tenantId,
      conversationId,
      throughSeq: cut.seq - 1,
      blocks,
      facts,
      tokens: Math.ceil(charsOf(blocks) * measured),
    });
    fitted = build(base, rows, summary, prefixChars);
    tokens = fitted.chars * measured <= budget * NO_COUNT_SHARE ? 0 : await deps.model.countTokens(fitted.request);
    if (!tokens) return fitted;
  }
  // Nothing more can be folded (the run's own messages are this large): send it if the model can take it.
  if (tokens > CONTEXT_WINDOW_TOKENS) return { kind: "too_long", tokens };
  return { ...fitted, requestTokens: tokens };
}

/**
 * The request `rows` (after `summary`, when there is one) would make, with its size in characters. The size is known
 * at once; the messages are built only when the request is taken (`fitted`), so weighing the whole transcript of a
 * long conversation before using its summary costs a sum, not a pass that builds every message.
 */
function build(
  base: Omit<ModelRequest, "messages" | "summaryBlocks">,
  rows: TranscriptRow[],
  summary: ContextSummary | null,
  prefixChars: number,
): FittedContext {
  const from = verbatimFrom(rows, summary);
  let chars = prefixChars + (summary ? sizeOf(summary.blocks) + MESSAGE_OVERHEAD_CHARS : 0);
  for (let i = from; i < rows.length; i++) chars += sizeOf(rows[i]!.content) + MESSAGE_OVERHEAD_CHARS;
  let request: ModelRequest | undefined;
  return {
    kind: "fitted",
    get request() {
      if (!request)
        request = { ...base, messages: requestMessages(rows, summary, from), summaryBlocks: summary ? summary.blocks.length : 0 };
      return request;
    },
    fromSeq: summary ? (rows[from]?.seq ?? null) : null,
    summaryId: summary?.id ?? null,
    requestTokens: null,
    chars,
  };
}

/** Where the verbatim part of a request starts in `rows`: at the first row after `summary` (0: no summary). */
function verbatimFrom(rows: Array<{ seq: number }>, summary: Pick<ContextSummary, "throughSeq"> | null): number {
  let from = 0;
  if (summary) while (from < rows.length && rows[from]!.seq <= summary.throughSeq) from++;
  return from;
}

/**
 * The messages of a request made of `rows` after `summary`: the summary's blocks as the first (user) message, then
 * the rows after it verbatim; without a summary, the rows. How every request is built — and how a run's inspector
 * (lib/runs/detail) rebuilds one from its model call's record.
 */
export function requestMessages(
  rows: Array<{ seq: number; role: string; content: unknown }>,
  summary: Pick<ContextSummary, "throughSeq" | "blocks"> | null,
  from = verbatimFrom(rows, summary),
): MessageParam[] {
  const tail = from ? rows.slice(from) : rows;
  return summary ? buildModelMessages([{ role: "user", content: summary.blocks }, ...tail]) : buildModelMessages(tail);
}

function answersToolCall(row: TranscriptRow): boolean {
  return (row.content as ContentBlock[]).some((b) => b.type === "tool_result");
}

/** For each row, the characters of it and everything after it. */
function suffixSizes(rows: TranscriptRow[]): Map<number, number> {
  const out = new Map<number, number>();
  let total = 0;
  for (let i = rows.length - 1; i >= 0; i--) {
    total += sizeOf(rows[i]!.content) + MESSAGE_OVERHEAD_CHARS;
    out.set(rows[i]!.seq, total);
  }
  return out;
}
