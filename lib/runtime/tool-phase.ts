import type Anthropic from "@anthropic-ai/sdk";
import type { RuntimeDeps } from "./deps";
import { actedCall, extendTranscript, runDoneColumns, type RunDone, type RunState } from "./run-state";
import { callsOfMessage, settleCallSql, type CallSettlement, type ToolCallRow } from "./tool-call-rows";
import { assertLease, fencedCtes } from "./lease";
import { Prisma } from "@/lib/db/prisma-types";
import { fastSql, runtimeTransaction, type Db } from "@/lib/db/sql";
import { randomUUID } from "node:crypto";
import { failpoint } from "./failpoints";
import { gateToolUse, readVerification, recordGatedCall, type GateContext, type GatedCall, type RunRef } from "./tool-gating";
import type { TranscriptRow } from "./transcript";
import { executeCall } from "./tool-execution";
import { canonicalJson } from "./idempotency";
import { appendMessagesCtes, type ContentBlock, type MessageToAppend } from "./transcript";

export const TERMINAL = new Set(["SUCCEEDED", "FAILED", "DENIED", "EXPIRED"]);

export type ToolPhaseOutcome =
  | { kind: "results_appended" }
  | { kind: "parked" }
  | { kind: "waiting_for_retry"; at: Date }
  | { kind: "dead_letter"; reason: string };

/**
 * Advances the tool phase of one assistant message: gates calls not yet decided, runs every approved call
 * (concurrently), and — once every call has a result — appends ONE user message with one tool_result per
 * tool_use, in the order of the tool_use blocks, followed by any customer text that arrived meanwhile.
 * Until then the run waits (for a person, or for a retry); nothing is half-appended.
 */
export async function advanceToolPhase(deps: RuntimeDeps, state: RunState, assistant: { seq: number; content: ContentBlock[] }, rows: TranscriptRow[]): Promise<ToolPhaseOutcome> {
  const { ref: run, policy } = state;
  const uses = assistant.content.filter((b): b is Anthropic.ToolUseBlockParam => b.type === "tool_use");
  const nowMs = Date.now();
  // A deferred call is gated again once its time comes (the condition that deferred it may have cleared).
  const dueDeferred = (c: ToolCallRow) => c.status === "DEFERRED" && (!c.nextAttemptAt || c.nextAttemptAt.getTime() <= nowMs);
  // A tool_use this advance has just appended: its calls are as recorded with it (or none yet) — no need to look.
  const fresh = state.toolUseTurn?.seq === assistant.seq ? state.toolUseTurn : null;
  state.toolUseTurn = null;
  const all = fresh ? fresh.calls : await callsOfMessage(fastSql(deps.db), run.id, assistant.seq);
  // (Calls gated just now, with the turn, are not gated again in the same step.)
  const regate = fresh ? [] : all.filter(dueDeferred);
  const known = all.filter((c) => !regate.includes(c));
  const missing = uses.filter((u) => !known.some((c) => c.toolUseId === u.id));

  let gated: ToolCallRow[] = [];
  // The conversation's verified customer as gating just read it, for the calls it lets run.
  let verifiedCustomerId = fresh?.calls.length ? fresh.verifiedCustomerId : undefined;
  if (missing.length) {
    ({ calls: gated, verifiedCustomerId } = await gateMissingCalls(deps, state, assistant, rows, uses, known, regate));
    failpoint("after-gate");
  }

  let calls = [...known, ...gated].sort((a, b) => a.position - b.position);
  const now = Date.now();
  // EXECUTING here means a worker died mid-call: run it again; its idempotency key makes that safe.
  const runnable = calls.filter((c) => c.status === "APPROVED" || c.status === "EXECUTING" || (c.status === "RETRY_WAIT" && (!c.nextAttemptAt || c.nextAttemptAt.getTime() <= now)));
  // Outcomes not written yet: they are written with the results message (or, if the run now waits, on their own).
  let unwritten: Unwritten[] = [];
  if (runnable.length) {
    // Several tool_use blocks of one reply run concurrently; the next request waits for all of them.
    const executions = await Promise.all(runnable.map((c) => executeCall(deps, run, c, policy, { verifiedCustomerId, settleLater: true })));
    calls = calls.map((c) => {
      const i = runnable.indexOf(c);
      return i === -1 ? c : { ...c, ...executions[i]!.settled };
    });
    unwritten = executions.flatMap((e) => (e.unwritten ? [{ ...e.unwritten, settlement: e.settled }] : []));
  }

  const waiting = calls.filter((c) => c.status === "RETRY_WAIT" || c.status === "DEFERRED");
  if (calls.some((c) => c.status === "PARKED") || waiting.length) {
    if (unwritten.length) await fencedCtes(fastSql(deps.db), run.id, deps.workerId, deps.leaseMs, { activeMs: sumActiveMs(unwritten) }, settlementCtes(unwritten));
    if (calls.some((c) => c.status === "PARKED")) return { kind: "parked" };
    return { kind: "waiting_for_retry", at: new Date(Math.min(...waiting.map((c) => c.nextAttemptAt?.getTime() ?? now + 1000))) };
  }
  if (!calls.every((c) => TERMINAL.has(c.status))) throw new Error(`tool phase of run ${run.id} left calls unsettled`);

  const exhausted = calls.find((c) => c.isError && (c.result as { exhausted?: boolean } | null)?.exhausted);
  const appended = await appendResults(deps, run, uses, calls, unwritten);
  extendTranscript(state, appended.row);
  state.done = appended.done;
  failpoint("after-results-appended");
  if (exhausted) return { kind: "dead_letter", reason: `${exhausted.name} kept failing: ${(exhausted.result as { message?: string }).message ?? ""}` };
  return { kind: "results_appended" };
}

/**
 * The ONE user message answering an assistant message: a tool_result per tool_use, in tool_use order, then the
 * customer text queued while the calls were pending — taken (`queuedCte`, under their row locks, in order) by the
 * same statement that appends the message.
 */
export function resultsMessage(run: RunRef, uses: Anthropic.ToolUseBlockParam[], calls: Array<{ toolUseId: string; result: unknown; isError: boolean }>): { queuedCte: Prisma.Sql; message: MessageToAppend } {
  const results: ContentBlock[] = uses.map((use) => {
    const call = calls.find((c) => c.toolUseId === use.id)!;
    return { type: "tool_result", tool_use_id: use.id, content: JSON.stringify(call.result ?? {}), ...(call.isError ? { is_error: true } : {}) };
  });
  return {
    queuedCte: Prisma.sql`
      queued AS (
        UPDATE "Message" SET "pendingDelivery" = false, "runId" = ${run.id} FROM lease
        WHERE "Message".id IN (SELECT id FROM "Message" WHERE "conversationId" = ${run.conversationId} AND "pendingDelivery" ORDER BY seq FOR UPDATE)
        RETURNING seq, "displayText"
      )`,
    message: {
      id: randomUUID(),
      message: { tenantId: run.tenantId, conversationId: run.conversationId, runId: run.id, role: "user", author: "HARNESS", content: results },
      content: Prisma.sql`${JSON.stringify(results)}::jsonb || coalesce((SELECT jsonb_agg(jsonb_build_object('type', 'text', 'text', coalesce(q."displayText", '')) ORDER BY q.seq) FROM queued q), '[]'::jsonb)`,
    },
  };
}

/**
 * Runs the gates on the calls of a tool_use message not in `known` (reading what they need); writes nothing.
 * `messageSeq`: the message's seq, for the call before it (identical-call detection) — Infinity when it is not
 * in `rows` yet.
 */
export async function decideCalls(db: Db, state: RunState, rows: TranscriptRow[], messageSeq: number, uses: Anthropic.ToolUseBlockParam[], known: ToolCallRow[], gates: RuntimeDeps["gates"]) {
  const { ref: run, policy } = state;
  // Read alongside what each gate reads (one round trip, not two): the gates await it after their own reads.
  const verification = readVerification(db, run.conversationId);
  verification.catch(() => undefined); // awaited below; a gate that fails first must not leave it unhandled
  const ctx: GateContext = { run, policy, conversation: verification, previousCall: previousToolUse(rows, run, messageSeq), now: new Date() };
  const decided: GatedCall[] = [];
  for (const [position, use] of uses.entries()) {
    if (!known.some((c) => c.toolUseId === use.id)) decided.push(await gateToolUse(db, { ...ctx }, { id: use.id, name: use.name, input: use.input }, position, gates));
    ctx.previousCall = { name: use.name, canonicalInput: canonicalJson(use.input ?? {}) };
  }
  return { ctx: { ...ctx, conversation: await verification }, decided };
}

/**
 * Gates the calls of an assistant message that have no decision yet (the turn was recorded alone, a deferred call
 * is due, or a worker resumes) and records them with every gate's decision, in a transaction: on the pg fast path
 * unless a call parks or escalates (a handoff to open), then in a Prisma transaction.
 */
async function gateMissingCalls(deps: RuntimeDeps, state: RunState, assistant: { seq: number }, rows: TranscriptRow[], uses: Anthropic.ToolUseBlockParam[], known: ToolCallRow[], regate: ToolCallRow[]): Promise<{ calls: ToolCallRow[]; verifiedCustomerId: string | null }> {
  return runtimeTransaction(deps.db, async (tx) => {
    await assertLease(tx, state.ref.id, deps.workerId, deps.leaseMs);
    // Its earlier gate decisions stay in the audit trail; the call row is decided afresh.
    if (regate.length) await tx.execute(Prisma.sql`DELETE FROM "ToolCall" WHERE id IN (${Prisma.join(regate.map((c) => c.id))})`);
    const { ctx, decided } = await decideCalls(tx, state, rows, assistant.seq, uses, known, deps.gates);
    const out: ToolCallRow[] = [];
    for (const g of decided) out.push(await recordGatedCall(tx, ctx, g, assistant.seq));
    return { calls: out, verifiedCustomerId: ctx.conversation.verifiedCustomerId };
  });
}

/** Appends the results message (see resultsMessage) with the outcomes not written yet, in one statement fenced by the lease. */
async function appendResults(deps: RuntimeDeps, run: RunRef, uses: Anthropic.ToolUseBlockParam[], calls: ToolCallRow[], unwritten: Unwritten[]): Promise<{ row: TranscriptRow; done: RunDone }> {
  const results = resultsMessage(run, uses, calls);
  const settledNow = unwritten.map((u) => u.id);
  const appended = await fencedCtes<{ seq: number; content: ContentBlock[]; effects: string[]; acted: number }>(fastSql(deps.db), run.id, deps.workerId, deps.leaseMs, { activeMs: sumActiveMs(unwritten) }, Prisma.sql`
    ${unwritten.length ? Prisma.sql`${settlementCtes(unwritten)},` : Prisma.empty}
    ${results.queuedCte}, ${appendMessagesCtes([results.message], { from: Prisma.sql`lease` })}`,
    Prisma.sql`msg.seq, msg.content, ${runDoneColumns(run.id, settledNow)} FROM msg`);
  return {
    row: { seq: appended.seq, role: "user", content: appended.content, author: "HARNESS", runId: run.id },
    done: { effects: appended.effects, acted: appended.acted + calls.filter((c) => settledNow.includes(c.id) && actedCall(c)).length },
  };
}

type Unwritten = { id: string; activeMs: number; settlement: CallSettlement };

/** Calls' outcomes as CTEs (`settled0`, …) of a statement fenced by the lease. */
function settlementCtes(unwritten: Unwritten[]): Prisma.Sql {
  return Prisma.join(unwritten.map((u, i) => Prisma.sql`${Prisma.raw(`settled${i}`)} AS (${settleCallSql(u.id, u.settlement, Prisma.sql`FROM lease`)})`), ", ");
}

const sumActiveMs = (unwritten: Unwritten[]) => unwritten.reduce((sum, u) => sum + u.activeMs, 0);

/** The tool call of this run just before this message (from the transcript), for identical-call detection. */
function previousToolUse(rows: TranscriptRow[], run: RunRef, beforeSeq: number): { name: string; canonicalInput: string } | null {
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i]!;
    if (row.seq >= beforeSeq || row.role !== "assistant" || row.runId !== run.id) continue;
    const uses = (row.content as ContentBlock[]).filter((b): b is Anthropic.ToolUseBlockParam => b.type === "tool_use");
    const last = uses[uses.length - 1];
    if (last) return { name: last.name, canonicalInput: canonicalJson(last.input ?? {}) };
  }
  return null;
}
