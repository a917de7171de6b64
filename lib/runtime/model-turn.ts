import type Anthropic from "@anthropic-ai/sdk";
import { randomUUID } from "node:crypto";
import { fastSql, runtimeTransaction, sqlOf, type Db } from "@/lib/db/sql";
import { SYSTEM_PROMPT } from "@/lib/agent/prompt";
import { toolDefinitionsForModel } from "@/lib/tools/registry";
import { classifyModelError, estimateCostMicros } from "@/lib/model/client";
import type { RuntimeDeps } from "./deps";
import { assertLease, fencedWrite } from "./lease";
import { Prisma } from "@/lib/db/prisma-types";
import { failpoint } from "./failpoints";
import { backoffMs } from "./retry";
import { appendMessage, buildModelMessages, transcriptViolations, type AppendMessage, type ContentBlock, type TranscriptRow } from "./transcript";
import { extendTranscript, forgetTranscript, runDoneColumns, type RunDone, type RunState } from "./run-state";
import { completeRunWithReply, escalateRun, finishRun } from "./run-end";
import { recordToolUseTurn } from "./tool-use-turn";
import { orderNumbersIn, stopCheck } from "./stop-check";
import type { RunRef } from "./tool-gating";

export type TurnOutcome =
  | { kind: "continue" }
  | { kind: "ended"; phase: "COMPLETED" | "ESCALATED" | "DEAD_LETTER"; followUpRunId: string | null }
  | { kind: "waiting_for_retry"; at: Date };

const MAX_TOKENS = Number(process.env.SUPPORT_MAX_TOKENS ?? 1024);
const MAX_TOKENS_RETRY = Number(process.env.SUPPORT_MAX_TOKENS_RETRY ?? 4096);
const MAX_PAUSE_TURNS = 3;
const MAX_CORRECTIONS = 2;

const toolsForModel = toolDefinitionsForModel();

/**
 * One model turn: send the conversation, inspect stop_reason, append. The decision is stop_reason — never the
 * text, never a counter — and every value is handled; anything unexpected fails to a handoff, never to success.
 */
export async function runModelTurn(deps: RuntimeDeps, state: RunState, rows: TranscriptRow[]): Promise<TurnOutcome> {
  const { ref, policy } = state;
  const run = { ...state.counters, model: state.model };
  const ended = (followUpRunId: string | null, phase: "COMPLETED" | "ESCALATED" | "DEAD_LETTER" = "ESCALATED"): TurnOutcome => ({ kind: "ended", phase, followUpRunId });
  const escalate = async (trigger: string, reason: string, rootCause: string, notice?: string) =>
    ended(await runtimeTransaction(deps.db, async (tx) => {
      await assertLease(tx, ref.id, deps.workerId, deps.leaseMs);
      return escalateRun(tx, ref, { trigger, reason, rootCause, notice, model: run.model, policy });
    }));

  // Caps are guards, not stop conditions: hitting one hands off with an honest message.
  const b = policy.rules.budgets;
  if (run.turnsUsed >= run.maxTurns) return escalate("budget", `The run used all ${run.maxTurns} model turns.`, "Turn budget exhausted before the request was resolved.");
  if (run.inputTokens + run.outputTokens >= run.tokenBudget) return escalate("budget", `The run used its token budget (${run.tokenBudget}).`, "Token budget exhausted.");
  if (run.activeMs >= b.wallTimeSeconds * 1000) return escalate("budget", `The run used its ${b.wallTimeSeconds}s of working time.`, "Wall-time budget exhausted.");

  const messages = buildModelMessages(rows);
  const violations = transcriptViolations(messages);
  if (violations.length) {
    // Never send a request the provider would reject; this is a bug, and a person must look.
    return escalate("no_progress", "The transcript broke the tool_use/tool_result contract.", violations.join("; "));
  }
  const throughSeq = rows[rows.length - 1]?.seq ?? 0;
  const maxTokens = run.maxTokensRetries > 0 ? MAX_TOKENS_RETRY : MAX_TOKENS;

  let message: Anthropic.Message;
  let latencyMs: number;
  try {
    const response = await deps.model.send(
      { system: SYSTEM_PROMPT, tools: toolsForModel, messages, maxTokens },
      { stream: !!deps.onTextDelta, onTextDelta: deps.onTextDelta ? (t: string) => deps.onTextDelta!(ref.conversationId, t) : undefined },
    );
    message = response.message;
    latencyMs = response.latencyMs;
  } catch (err) {
    const cls = classifyModelError(err);
    const attempts = run.requestAttempts + 1;
    const errorText = err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 500) : String(err);
    return runtimeTransaction(deps.db, async (tx) => {
      await assertLease(tx, ref.id, deps.workerId, deps.leaseMs);
      await sqlOf(tx).execute(modelCallInsert({ tenantId: ref.tenantId, runId: ref.id, turn: run.turnsUsed + 1, model: deps.model.model, stopReason: null, error: `${cls.kind}: ${errorText}`, maxTokens, latencyMs: 0, throughSeq, response: null }));
      if (cls.retryable && attempts < b.maxRequestAttempts) {
        const at = new Date(Date.now() + backoffMs(attempts));
        await tx.execute(Prisma.sql`
          UPDATE "Run" SET "requestAttempts" = ${attempts}, phase = 'WAITING_FOR_RETRY', "nextAttemptAt" = ${at}, "leaseOwner" = NULL, "leaseExpiresAt" = NULL, "updatedAt" = now()
          WHERE id = ${ref.id}`);
        return { kind: "waiting_for_retry", at } as TurnOutcome;
      }
      await tx.execute(Prisma.sql`UPDATE "Run" SET "requestAttempts" = ${attempts}, "updatedAt" = now() WHERE id = ${ref.id}`);
      return ended(await escalateRun(tx, ref, { trigger: "no_progress", reason: `The model could not be reached (${cls.kind}) after ${attempts} attempt(s).`, rootCause: errorText, phase: "DEAD_LETTER", model: run.model, policy }), "DEAD_LETTER");
    });
  }
  failpoint("after-model-response");

  const usage = message.usage;
  const stop = message.stop_reason as string | null;
  const toolUses = message.content.filter((c) => c.type === "tool_use");
  const text = message.content.filter((c): c is Anthropic.TextBlock => c.type === "text").map((c) => c.text).join("\n").trim();

  const cost = estimateCostMicros(message.model, usage);
  const inputTokens = usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
  const stepCounters = { turns: 1, inputTokens, outputTokens: usage.output_tokens, costMicros: cost, activeMs: latencyMs, resetRequestAttempts: true, lastStopReason: stop };
  const call: ModelCallRecord = {
    tenantId: ref.tenantId, runId: ref.id, turn: run.turnsUsed + 1, model: message.model, stopReason: stop, error: null, maxTokens, latencyMs: Math.round(latencyMs), throughSeq,
    inputTokens: usage.input_tokens, outputTokens: usage.output_tokens,
    cacheReadTokens: usage.cache_read_input_tokens ?? 0, cacheWriteTokens: usage.cache_creation_input_tokens ?? 0,
    response: { id: message.id, content: message.content, stop_reason: stop, usage },
  };
  const assistantMessage = (shown: boolean): AppendMessage => ({
    tenantId: ref.tenantId, conversationId: ref.conversationId, runId: ref.id, role: "assistant", author: "AGENT", content: message.content as ContentBlock[], shownToCustomer: shown, displayText: shown ? text : null,
  });
  // The counters as the commit below wrote them (the lease is held, so this copy stays true).
  const counted = () => Object.assign(state.counters, {
    turnsUsed: run.turnsUsed + 1, inputTokens: run.inputTokens + inputTokens, outputTokens: run.outputTokens + usage.output_tokens,
    activeMs: run.activeMs + latencyMs, requestAttempts: 0,
  });

  // The two outcomes of almost every turn, each in ONE statement on the pg pool (lib/db/sql): a tool call to
  // answer, or a final reply that passes the stop check. Anything else takes the transaction below.
  if (stop === "tool_use" && toolUses.length) {
    await recordToolUseTurn(deps, state, rows, toolUses, stepCounters, { modelCall: modelCallInsert(call, Prisma.sql`FROM lease`), assistant: assistantMessage(false) });
    counted();
    return { kind: "continue" };
  }
  if ((stop === "end_turn" || stop === "stop_sequence") && !toolUses.length && !checkReply(state.done, ref, text, rows).length) {
    const completed = await completeRunWithReply(fastSql(deps.db), ref, {
      owner: deps.workerId, counters: stepCounters, reply: message.content as ContentBlock[], text, modelCall: (from) => modelCallInsert(call, from),
    });
    if (completed) {
      counted();
      extendTranscript(state, { seq: completed.seq, role: "assistant", content: message.content, author: "AGENT", runId: ref.id });
      return ended(null, "COMPLETED");
    }
  }

  // On the pg fast path too; redone in a Prisma transaction when the turn escalates (opening a handoff).
  forgetTranscript(state);
  return runtimeTransaction(deps.db, async (tx): Promise<TurnOutcome> => {
    await fencedWrite(tx, ref.id, deps.workerId, deps.leaseMs, stepCounters, modelCallInsert(call, Prisma.sql`FROM lease`));
    counted();
    const escalateHere = async (trigger: string, reason: string, rootCause: string, notice?: string) =>
      ended(await escalateRun(tx, ref, { trigger, reason, rootCause, notice, model: run.model, policy }));
    const appendAssistant = (shown: boolean) => appendMessage(tx, assistantMessage(shown));

    switch (stop) {
      case "tool_use": // with its calls, recorded above
        return escalateHere("no_progress", "The model stopped for tool_use without a tool call.", "Malformed model response.");

      case "end_turn":
      case "stop_sequence": {
        if (toolUses.length) return escalateHere("no_progress", `The model ended its turn (${stop}) with an unanswered tool call.`, "Malformed model response.");
        // Locks the conversation too: ownership is checked at the moment of sending, under this lock.
        const facts = await replyFacts(tx, ref);
        const problems = checkReply(facts, ref, text, rows);
        const conversationStatus = facts.status;
        const blocking = problems.filter((p) => p.kind !== "unanswered_concern" || run.corrections < MAX_CORRECTIONS);
        if (blocking.length) {
          await appendAssistant(false); // kept in the transcript, never shown
          if (run.corrections >= MAX_CORRECTIONS) {
            return escalateHere("no_progress", "The agent's reply kept claiming something that did not happen.", blocking.map((p) => p.message).join(" "));
          }
          await assertLease(tx, ref.id, deps.workerId, deps.leaseMs, { corrections: 1 });
          state.counters.corrections += 1;
          await appendMessage(tx, { tenantId: ref.tenantId, conversationId: ref.conversationId, runId: ref.id, role: "user", author: "HARNESS", content: [{ type: "text", text: `[harness] stop-check: ${blocking.map((p) => p.message).join(" ")}` }] });
          return { kind: "continue" };
        }
        // Ownership is checked at the moment of sending: once a person took over, the agent's reply is kept
        // for the record but never reaches the customer.
        const personOwns = conversationStatus === "human";
        await appendAssistant(!personOwns);
        return ended(await finishRun(tx, ref, "COMPLETED", personOwns ? "end_turn (suppressed: a person owns the conversation)" : "end_turn", run.model, policy), "COMPLETED");
      }

      case "max_tokens":
        // Truncated: never an answer, and a cut tool_use is never executed. Retry once with a larger limit.
        if (run.maxTokensRetries >= 1) return escalateHere("no_progress", "The model's reply was cut off twice (max_tokens).", "Output limit reached even with the larger limit.");
        await assertLease(tx, ref.id, deps.workerId, deps.leaseMs, { maxTokensRetries: 1 });
        state.counters.maxTokensRetries += 1;
        return { kind: "continue" };

      case "pause_turn":
        if (run.pauseTurns >= MAX_PAUSE_TURNS) return escalateHere("no_progress", `The model paused its turn more than ${MAX_PAUSE_TURNS} times.`, "pause_turn loop.");
        await assertLease(tx, ref.id, deps.workerId, deps.leaseMs, { pauseTurns: 1 });
        state.counters.pauseTurns += 1;
        await appendAssistant(false); // sent back as it is; the model continues from it
        return { kind: "continue" };

      case "refusal":
        return escalateHere("refusal", "The model declined to continue (refusal).", "Model refusal.", "I'm not able to help with that here. I've passed your conversation to a member of our team, who will follow up.");

      case "model_context_window_exceeded":
        return escalateHere("no_progress", "The conversation no longer fits the model's context window.", "Context window exceeded.");

      default:
        // An unknown stop_reason is suspicious: fail to a handoff, never to success.
        return escalateHere("no_progress", `The model stopped for an unknown reason: ${String(stop)}.`, "Unknown stop_reason.");
    }
  });
}

/** The conversation's status, locked (ownership is checked at the moment of sending), and what the run has done. */
async function replyFacts(tx: Db, ref: RunRef): Promise<RunDone & { status: string }> {
  const [facts] = await sqlOf(tx).query<RunDone & { status: string }>(Prisma.sql`
    SELECT c.status::text AS status, ${runDoneColumns(ref.id)} FROM "Conversation" c WHERE c.id = ${ref.conversationId} FOR UPDATE OF c`);
  if (!facts) throw new Error(`conversation ${ref.conversationId} not found`);
  return facts;
}

/** Compares the reply with what this run actually did and with the orders the customer raised. */
function checkReply(done: { effects: string[]; acted: number }, ref: RunRef, reply: string, rows: TranscriptRow[]) {
  const raised = rows
    .filter((r) => r.runId === ref.id && r.role === "user")
    .flatMap((r) => (r.content as ContentBlock[]).filter((b): b is Anthropic.TextBlockParam => b.type === "text" && !b.text.startsWith("[harness]")))
    .flatMap((b) => orderNumbersIn(b.text));
  return stopCheck({ reply, effectsDone: done.effects, ordersRaised: done.acted > 0 ? [...new Set(raised)] : [] });
}

/** One model call as recorded for the inspector: stop reason, usage, latency, and the response as returned. */
interface ModelCallRecord {
  tenantId: string; runId: string; turn: number; model: string; stopReason: string | null; error: string | null; maxTokens: number; latencyMs: number; throughSeq: number;
  inputTokens?: number; outputTokens?: number; cacheReadTokens?: number; cacheWriteTokens?: number; response: unknown;
}

/** The INSERT of a model call; `from` makes it conditional (`FROM lease`: written only under the lease). */
function modelCallInsert(m: ModelCallRecord, from: Prisma.Sql = Prisma.empty): Prisma.Sql {
  return Prisma.sql`
    INSERT INTO "ModelCall" (id, "tenantId", "runId", turn, model, "stopReason", error, "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "maxTokens", "latencyMs", "throughSeq", response)
    SELECT ${randomUUID()}, ${m.tenantId}, ${m.runId}, ${m.turn}, ${m.model}, ${m.stopReason}, ${m.error}, ${m.inputTokens ?? 0}, ${m.outputTokens ?? 0},
           ${m.cacheReadTokens ?? 0}, ${m.cacheWriteTokens ?? 0}, ${m.maxTokens}, ${m.latencyMs}, ${m.throughSeq}, ${m.response === null ? null : JSON.stringify(m.response)}::jsonb
    ${from}`;
}
