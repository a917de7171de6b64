// One model turn (DESIGN §2.1): send the conversation, inspect stop_reason, write what follows in ONE statement. The
// decision is stop_reason — never the text, never a counter — and every value is handled; anything unexpected fails
// to a handoff, never to success.
import type Anthropic from "@anthropic-ai/sdk";
import { sql } from "kysely";
import { storeOf } from "@/lib/db/kysely";
import { harnessNote, readFramed } from "@/lib/agent/framing";
import { unusableToolUseIds } from "@/lib/agents/namespace";
import { SYSTEM_PROMPT } from "@/lib/agent/prompt";
import { classifyModelError, estimateCostMicros } from "@/lib/model/client";
import type { ModelToolDefinition } from "@/lib/model/types";
import type { Policy } from "@/lib/policy/policy";
import type { RunCounters } from "@/lib/store/lease";
import { addModelCall, addShopSpend, type ModelCallRecord } from "@/lib/store/model-calls";
import { type ContentBlock, type TranscriptRow, toolUseIdsIn, transcriptViolations, withoutBlankText } from "@/lib/store/transcript";
import { toolDefinitionsForModel } from "@/lib/tools/registry";
import type { RuntimeDeps } from "./deps";
import { endRun, escalateRun } from "./end";
import { type ContextFit, fitContext, noteRequestSize } from "./context";
import { failpoint } from "./failpoints";
import { backoffMs } from "./retry";
import { exhaustedBudget } from "./budgets";
import { extendTranscript, landInFlight, type RunState } from "./run-state";
import type { StepOutcome } from "./step";
import { StepWrite } from "./step-write";
import { orderNumbersIn, stopCheck } from "./stop-check";
import { ReplyRelease } from "./reply-release";
import { recordToolUseTurn } from "./tool-use-turn";
import { setting } from "@/lib/env";

const MAX_PAUSE_TURNS = 3;
const MAX_CORRECTIONS = 2;

const allTools = toolDefinitionsForModel();
const toolsByPolicy = new Map<string, ModelToolDefinition[]>();

/** The tools the model is offered: only those the shop's policy allows (a tool it never sees, it cannot call). */
export function toolsFor(tenantId: string, policy: Policy): ModelToolDefinition[] {
  const key = `${tenantId}:${policy.version}`;
  let tools = toolsByPolicy.get(key);
  if (!tools) {
    tools = allTools.filter((t) => policy.rules.allowedTools.includes(t.name));
    toolsByPolicy.set(key, tools);
  }
  return tools;
}

/**
 * Sends the conversation and acts on the stop_reason. Caps are guards, not stop conditions: hitting one hands off
 * with an honest message.
 */
export async function runModelTurn(deps: RuntimeDeps, state: RunState, rows: TranscriptRow[]): Promise<StepOutcome> {
  if (!deps.drafts) return modelTurn(deps, state, rows, null);
  // Streamed: what is safe to show is shown as it is written; the draft ends once the step is written (the stored
  // reply replaces it, or — a tool call, a reply sent back by the stop check — it disappears).
  const release = new ReplyRelease({ effectsDone: state.done.effects });
  const ref = { tenantId: state.ref.tenantId, conversationId: state.ref.conversationId, runId: state.ref.id };
  try {
    return await modelTurn(deps, state, rows, (delta) => {
      const shown = release.push(delta);
      if (shown !== null) deps.drafts!.show(ref, shown);
    });
  } finally {
    if (release.released) deps.drafts.end(ref);
  }
}

async function modelTurn(
  deps: RuntimeDeps,
  state: RunState,
  rows: TranscriptRow[],
  onTextDelta: ((delta: string) => void) | null,
): Promise<StepOutcome> {
  const db = storeOf(deps.db);
  const { ref, policy, counters: run } = state;
  // The previous step may still be committing (see InFlightStep): only the request goes out before it has; anything
  // this turn writes, shows or decides waits for it (`land`), and its rows replace the provisional ones.
  let inFlight = state.inFlight;
  state.inFlight = null;
  let asSent = true;
  const land = async () => {
    if (!inFlight) return;
    const step = inFlight;
    inFlight = null;
    const landed = await landInFlight(db, state, step);
    rows = landed.rows;
    asSent = landed.asSent;
  };
  const escalate = async (trigger: string, reason: string, rootCause: string, w?: StepWrite, notice?: string) => {
    await land();
    const e = await escalateRun(db, w ?? new StepWrite(state), { trigger, reason, rootCause, recommendedAction: "", notice });
    return { kind: "ended" as const, ...e };
  };

  const exhausted = exhaustedBudget(state);
  if (exhausted) return escalate("budget", exhausted.reason, exhausted.rootCause);

  let throughSeq = rows[rows.length - 1]?.seq ?? 0;
  const maxTokens = run.maxTokensRetries > 0 ? setting("SUPPORT_MAX_TOKENS_RETRY") : setting("SUPPORT_MAX_TOKENS");
  const turn = run.turnsUsed + 1;

  let message: Anthropic.Message;
  let latencyMs: number;
  let fit: ContextFit;
  try {
    // Under the context budget: older messages folded into the rolling summary when they would not fit.
    fit = await fitContext(deps, db, state, rows, { system: SYSTEM_PROMPT, tools: toolsFor(ref.tenantId, policy), maxTokens });
  } catch (err) {
    await land();
    return modelRequestFailed(deps, state, err, { turn, maxTokens, throughSeq }); // the count is a request too
  }
  if (fit.kind === "too_long")
    return escalate(
      "no_progress",
      "The conversation no longer fits the model's context window.",
      `The run's own messages are ${fit.tokens} tokens; nothing older is left to summarise.`,
    );
  const context = fit;
  const violations = transcriptViolations(context.request.messages);
  // Never send a request the provider would reject; this is a bug, and a person must look.
  if (violations.length) return escalate("no_progress", "The transcript broke the tool_use/tool_result contract.", violations.join("; "));
  // Text streamed before the step in flight has committed is held back until it has (and dropped if it is not used).
  let held: string[] | null = inFlight ? [] : null;
  const onDelta = onTextDelta && ((delta: string) => (held ? held.push(delta) : asSent && onTextDelta(delta)));
  const sending = deps.model.send(context.request, { stream: !!onTextDelta, onTextDelta: onDelta ?? undefined });
  // Handled at once: a request that fails before the step in flight has landed is no unhandled rejection (it is
  // awaited below — or never, when landing fails).
  sending.catch(() => undefined);
  await land();
  throughSeq = rows[rows.length - 1]?.seq ?? 0;
  const heldBack = held ?? [];
  held = null;
  if (asSent && onTextDelta) for (const delta of heldBack) onTextDelta(delta);
  try {
    const response = await sending;
    message = response.message;
    latencyMs = response.latencyMs;
  } catch (err) {
    return modelRequestFailed(deps, state, err, { turn, maxTokens, throughSeq });
  }
  failpoint("after-model-response");

  const usage = message.usage;
  const stop = message.stop_reason as string | null;
  const toolUses = message.content.filter((c): c is Anthropic.ToolUseBlock => c.type === "tool_use");
  const text = message.content
    .filter((c): c is Anthropic.TextBlock => c.type === "text")
    .map((c) => c.text)
    .join("\n")
    .trim();
  const inputTokens = usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
  noteRequestSize(ref.conversationId, context.chars, inputTokens);
  const costMicros = estimateCostMicros(message.model, usage);
  const stepCounters: RunCounters = {
    turns: 1,
    inputTokens,
    outputTokens: usage.output_tokens,
    costMicros,
    activeMs: latencyMs,
    resetRequestAttempts: true,
    lastStopReason: stop,
  };
  const call: ModelCallRecord = {
    tenantId: ref.tenantId,
    runId: ref.id,
    turn,
    model: message.model,
    stopReason: stop,
    error: null,
    maxTokens,
    latencyMs,
    throughSeq,
    contextFromSeq: context.fromSeq,
    contextSummaryId: context.summaryId,
    requestTokens: context.requestTokens ?? inputTokens,
    inputTokens: usage.input_tokens,
    outputTokens: usage.output_tokens,
    cacheReadTokens: usage.cache_read_input_tokens ?? 0,
    cacheWriteTokens: usage.cache_creation_input_tokens ?? 0,
    costMicros,
    response: { id: message.id, content: message.content, stop_reason: stop, usage },
  };
  // Every step below writes the model call and these counters with its own statement.
  const step = () =>
    new StepWrite(state, { counters: stepCounters }).also((s) => {
      addModelCall(s, "model_call", call);
      addShopSpend(s, "shop_spend", ref.tenantId, costMicros);
    });
  // The counters as that statement wrote them (the lease is held, so this copy stays true).
  const counted = () => {
    Object.assign(state.counters, {
      turnsUsed: run.turnsUsed + 1,
      inputTokens: run.inputTokens + inputTokens,
      outputTokens: run.outputTokens + usage.output_tokens,
      costMicros: run.costMicros + (stepCounters.costMicros ?? 0),
      activeMs: run.activeMs + latencyMs,
      requestAttempts: 0,
    });
    state.spend.conversation += costMicros;
    state.spend.shopDay += costMicros;
  };
  // Stored as it came, less blank text blocks: the provider refuses them in a request, so one kept would break every
  // later request of the conversation (the model call above keeps the reply exactly).
  const content = withoutBlankText(message.content as ContentBlock[]);

  if (!asSent) {
    // Customer text joined the step in flight: the model answered a conversation without it. The call is kept (it
    // was made and paid for) and the turn is asked again with the transcript as committed.
    call.error = "superseded: customer text joined the previous step while this request was answered; asked again";
    await step().run(db);
    counted();
    return { kind: "next" };
  }

  switch (stop) {
    case "tool_use": {
      if (!toolUses.length)
        return escalate("no_progress", "The model stopped for tool_use without a tool call.", "Malformed model response.", step());
      const unusable = unusableToolUseIds(toolUses, toolUseIdsIn(rows));
      if (unusable)
        return escalate("no_progress", `The model's tool calls could not be recorded: ${unusable}.`, "Malformed model response.", step());
      const outcome = await recordToolUseTurn(deps, state, rows, toolUses, step(), content);
      counted();
      return outcome;
    }

    case "end_turn": {
      if (toolUses.length)
        return escalate("no_progress", "The model ended its turn with an unanswered tool call.", "Malformed model response.", step());
      const problems = checkReply(state, text, rows);
      const blocking = problems.filter((p) => p.kind !== "unanswered_concern" || run.corrections < MAX_CORRECTIONS);
      if (blocking.length) {
        const w = step();
        // Kept in the transcript, never shown — unless it is empty: the provider refuses an empty message.
        if (content.length) w.message({ role: "assistant", author: "AGENT", content });
        if (run.corrections >= MAX_CORRECTIONS) {
          return escalate(
            "no_progress",
            "The agent's reply kept claiming something that did not happen.",
            blocking.map((p) => p.message).join(" "),
            w,
          );
        }
        w.count({ corrections: 1 });
        w.message({
          role: "user",
          author: "HARNESS",
          content: [{ type: "text", text: harnessNote(`stop-check: ${blocking.map((p) => p.message).join(" ")}`) }],
        });
        await w.run(db);
        counted();
        state.counters.corrections += 1;
        state.transcript = null;
        return { kind: "next" };
      }
      const completed = await completeWithReply(deps, state, step(), content, text);
      counted();
      return completed;
    }

    case "max_tokens": {
      // Truncated: never an answer, and a cut tool_use is never executed. Retry once with a larger limit.
      if (run.maxTokensRetries >= 1)
        return escalate(
          "no_progress",
          "The model's reply was cut off twice (max_tokens).",
          "Output limit reached even with the larger limit.",
          step(),
        );
      await step().count({ maxTokensRetries: 1 }).run(db);
      counted();
      state.counters.maxTokensRetries += 1;
      return { kind: "next" };
    }

    case "pause_turn": {
      if (run.pauseTurns >= MAX_PAUSE_TURNS)
        return escalate("no_progress", `The model paused its turn more than ${MAX_PAUSE_TURNS} times.`, "pause_turn loop.", step());
      // pause_turn is for the provider's own tools: a call of ours in it is never run, so its tool_use, stored, would
      // stay unanswered (and the run would look as if it were in its tool step with no calls recorded).
      if (toolUses.length)
        return escalate("no_progress", "The model paused its turn with a tool call in it.", "Malformed model response.", step());
      const w = step().count({ pauseTurns: 1 });
      // Sent back as it is; the model continues from it (nothing is stored when it is empty: the request goes again).
      const kept = content.length > 0;
      if (kept) w.message({ role: "assistant", author: "AGENT", content });
      const row = await w.run<{ seq: number }>(db, kept ? sql`seq FROM conv_m0` : undefined);
      counted();
      state.counters.pauseTurns += 1;
      if (kept) extendTranscript(state, { seq: row!.seq, role: "assistant", content, author: "AGENT", runId: ref.id });
      return { kind: "next" };
    }

    case "refusal":
      return escalate(
        "refusal",
        "The model declined to continue (refusal).",
        "Model refusal.",
        step(),
        "I'm not able to help with that here. I've passed your conversation to a member of our team, who will follow up.",
      );

    case "stop_sequence":
      // The product sets no stop sequences: a reply cut at one is not an answer.
      return escalate("no_progress", "The model stopped at a stop sequence the product never sets.", "Unexpected stop_sequence.", step());

    case "model_context_window_exceeded":
      return escalate("no_progress", "The conversation no longer fits the model's context window.", "Context window exceeded.", step());

    default:
      // An unknown stop_reason is suspicious: fail to a handoff, never to success.
      return escalate("no_progress", `The model stopped for an unknown reason: ${String(stop)}.`, "Unknown stop_reason.", step());
  }
}

/** Run.outcome of a run whose reply was held back: a person owned the conversation (lib/console/run-outcome). */
export const SUPPRESSED_REPLY_OUTCOME = "end_turn (suppressed: a person owns the conversation)";

/**
 * The run's end with the agent's reply, in ONE statement: the reply appended — shown unless a person owns the
 * conversation, checked on its row as it is written (ownership at the moment of sending) — the run completed, the
 * conversation let go of (or handed to a follow-up run for text queued meanwhile). A reply held back ends the run
 * as SUPPRESSED_REPLY_OUTCOME, never as the agent's answer: the supervisor's runs and metrics count it as a person's
 * case. The outcome reads the conversation's row locked (FOR KEY SHARE waits for a takeover in flight and reads its
 * result), so it agrees with what the reply's own row says.
 */
async function completeWithReply(
  deps: RuntimeDeps,
  state: RunState,
  w: StepWrite,
  content: ContentBlock[],
  text: string,
): Promise<StepOutcome> {
  const { ref } = state;
  w.message({
    role: "assistant",
    author: "AGENT",
    content,
    shownToCustomer: sql`conv.status <> 'human'`,
    displayText: sql`CASE WHEN conv.status <> 'human' THEN ${text}::text END`,
  });
  const outcome = sql<string>`CASE WHEN (SELECT status FROM "Conversation" WHERE id = ${ref.conversationId} FOR KEY SHARE) = 'human'
    THEN ${SUPPRESSED_REPLY_OUTCOME} ELSE 'end_turn' END`;
  const { followUpRunId } = endRun(w, "COMPLETED", outcome);
  const row = await w.run<{ seq: number; followUp: boolean }>(storeOf(deps.db), sql`conv_m0.seq, conv."followUp" FROM conv_m0, conv`);
  extendTranscript(state, { seq: row!.seq, role: "assistant", content, author: "AGENT", runId: ref.id });
  return { kind: "ended", phase: "COMPLETED", followUpRunId: row!.followUp ? followUpRunId : null };
}

/** A model request that failed after the SDK's own retries: wait and retry (same attempt budget), or dead-letter. */
async function modelRequestFailed(
  deps: RuntimeDeps,
  state: RunState,
  err: unknown,
  a: { turn: number; maxTokens: number; throughSeq: number },
): Promise<StepOutcome> {
  const { ref, policy } = state;
  const cls = classifyModelError(err);
  const attempts = state.counters.requestAttempts + 1;
  const errorText = err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 500) : String(err);
  const w = new StepWrite(state, { counters: { requestAttempts: 1 } }).also((s) =>
    addModelCall(s, "model_call", {
      tenantId: ref.tenantId,
      runId: ref.id,
      turn: a.turn,
      model: deps.model.model,
      stopReason: null,
      error: `${cls.kind}: ${errorText}`,
      maxTokens: a.maxTokens,
      latencyMs: 0,
      throughSeq: a.throughSeq,
      response: null,
    }),
  );
  if (cls.retryable && attempts < policy.rules.budgets.maxRequestAttempts) {
    const at = new Date(Date.now() + backoffMs(attempts));
    await w.transitionTo({ to: "WAITING_FOR_RETRY", release: true, nextAttemptAt: at }).run(storeOf(deps.db));
    return { kind: "waiting_for_retry", at };
  }
  const ended = await escalateRun(storeOf(deps.db), w, {
    trigger: "no_progress",
    reason: `The model could not be reached (${cls.kind}) after ${attempts} attempt(s).`,
    rootCause: errorText,
    recommendedAction: "",
    phase: "DEAD_LETTER",
  });
  return { kind: "ended", ...ended };
}

/** Compares the reply with what this run actually did and with the orders the customer raised. */
function checkReply(state: RunState, reply: string, rows: TranscriptRow[]) {
  const raised = rows
    .filter((r) => r.runId === state.ref.id && r.role === "user")
    .flatMap((r) => (r.content as ContentBlock[]).filter((b): b is Anthropic.TextBlockParam => b.type === "text"))
    .map((b) => readFramed(b.text))
    .filter((t) => t.kind === "customer" || t.kind === "unframed")
    .flatMap((t) => orderNumbersIn(t.text));
  return stopCheck({ reply, effectsDone: state.done.effects, ordersRaised: state.done.acted > 0 ? [...new Set(raised)] : [] });
}
