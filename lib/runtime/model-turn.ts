import type Anthropic from "@anthropic-ai/sdk";
import type { Json } from "@/lib/db/prisma-types";
import type { Policy } from "@/lib/policy/policy";
import { SYSTEM_PROMPT } from "@/lib/agent/prompt";
import { toolDefinitionsForModel } from "@/lib/tools/registry";
import { classifyModelError, estimateCostMicros } from "@/lib/model/client";
import type { RuntimeDeps } from "./deps";
import { assertLease } from "./lease";
import { failpoint } from "./failpoints";
import { backoffMs } from "./retry";
import { appendMessage, buildModelMessages, loadTranscriptRows, transcriptViolations, type ContentBlock } from "./transcript";
import { escalateRun, finishRun } from "./run-end";
import { orderNumbersIn, stopCheck } from "./stop-check";
import type { RunRef } from "./tool-gating";

export type TurnOutcome =
  | { kind: "continue" }
  | { kind: "ended"; followUpRunId: string | null }
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
export async function runModelTurn(deps: RuntimeDeps, ref: RunRef, policy: Policy): Promise<TurnOutcome> {
  const run = await deps.db.run.findUniqueOrThrow({ where: { id: ref.id } });
  const ended = (followUpRunId: string | null): TurnOutcome => ({ kind: "ended", followUpRunId });
  const escalate = async (trigger: string, reason: string, rootCause: string, notice?: string) =>
    ended(await deps.db.$transaction(async (tx) => {
      await assertLease(tx, ref.id, deps.workerId, deps.leaseMs);
      return escalateRun(tx, ref, { trigger, reason, rootCause, notice, model: run.model, policy });
    }));

  // Caps are guards, not stop conditions: hitting one hands off with an honest message.
  const b = policy.rules.budgets;
  if (run.turnsUsed >= run.maxTurns) return escalate("budget", `The run used all ${run.maxTurns} model turns.`, "Turn budget exhausted before the request was resolved.");
  if (run.inputTokens + run.outputTokens >= run.tokenBudget) return escalate("budget", `The run used its token budget (${run.tokenBudget}).`, "Token budget exhausted.");
  if (run.activeMs >= b.wallTimeSeconds * 1000) return escalate("budget", `The run used its ${b.wallTimeSeconds}s of working time.`, "Wall-time budget exhausted.");

  const rows = await loadTranscriptRows(deps.db, ref.conversationId);
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
    return deps.db.$transaction(async (tx) => {
      await assertLease(tx, ref.id, deps.workerId, deps.leaseMs);
      await tx.modelCall.create({ data: { tenantId: ref.tenantId, runId: ref.id, turn: run.turnsUsed + 1, model: deps.model.model, error: `${cls.kind}: ${errorText}`, maxTokens, latencyMs: 0, throughSeq } });
      if (cls.retryable && attempts < b.maxRequestAttempts) {
        const at = new Date(Date.now() + backoffMs(attempts));
        await tx.run.update({ where: { id: ref.id }, data: { requestAttempts: attempts, phase: "WAITING_FOR_RETRY", nextAttemptAt: at, leaseOwner: null, leaseExpiresAt: null } });
        return { kind: "waiting_for_retry", at } as TurnOutcome;
      }
      await tx.run.update({ where: { id: ref.id }, data: { requestAttempts: attempts } });
      return ended(await escalateRun(tx, ref, { trigger: "no_progress", reason: `The model could not be reached (${cls.kind}) after ${attempts} attempt(s).`, rootCause: errorText, phase: "DEAD_LETTER", model: run.model, policy }));
    });
  }
  failpoint("after-model-response");

  const usage = message.usage;
  const stop = message.stop_reason as string | null;
  const toolUses = message.content.filter((c) => c.type === "tool_use");
  const text = message.content.filter((c): c is Anthropic.TextBlock => c.type === "text").map((c) => c.text).join("\n").trim();

  return deps.db.$transaction(async (tx): Promise<TurnOutcome> => {
    await assertLease(tx, ref.id, deps.workerId, deps.leaseMs);
    await tx.modelCall.create({
      data: {
        tenantId: ref.tenantId, runId: ref.id, turn: run.turnsUsed + 1, model: message.model, stopReason: stop, maxTokens, latencyMs, throughSeq,
        inputTokens: usage.input_tokens, outputTokens: usage.output_tokens,
        cacheReadTokens: usage.cache_read_input_tokens ?? 0, cacheWriteTokens: usage.cache_creation_input_tokens ?? 0,
        response: { id: message.id, content: message.content, stop_reason: stop, usage } as unknown as Json,
      },
    });
    await tx.run.update({
      where: { id: ref.id },
      data: {
        turnsUsed: { increment: 1 }, requestAttempts: 0, lastStopReason: stop,
        inputTokens: { increment: usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) },
        outputTokens: { increment: usage.output_tokens },
        costMicros: { increment: estimateCostMicros(message.model, usage) },
        activeMs: { increment: latencyMs },
      },
    });
    const escalateHere = async (trigger: string, reason: string, rootCause: string, notice?: string) =>
      ended(await escalateRun(tx, ref, { trigger, reason, rootCause, notice, model: run.model, policy }));
    const appendAssistant = (shown: boolean) =>
      appendMessage(tx, { tenantId: ref.tenantId, conversationId: ref.conversationId, runId: ref.id, role: "assistant", author: "AGENT", content: message.content as ContentBlock[], shownToCustomer: shown, displayText: shown ? text : null });

    switch (stop) {
      case "tool_use":
        if (!toolUses.length) return escalateHere("no_progress", "The model stopped for tool_use without a tool call.", "Malformed model response.");
        await appendAssistant(false);
        return { kind: "continue" };

      case "end_turn":
      case "stop_sequence": {
        if (toolUses.length) return escalateHere("no_progress", `The model ended its turn (${stop}) with an unanswered tool call.`, "Malformed model response.");
        const problems = await checkReply(tx, ref, text);
        const blocking = problems.filter((p) => p.kind !== "unanswered_concern" || run.corrections < MAX_CORRECTIONS);
        if (blocking.length) {
          await appendAssistant(false); // kept in the transcript, never shown
          if (run.corrections >= MAX_CORRECTIONS) {
            return escalateHere("no_progress", "The agent's reply kept claiming something that did not happen.", blocking.map((p) => p.message).join(" "));
          }
          await tx.run.update({ where: { id: ref.id }, data: { corrections: { increment: 1 } } });
          await appendMessage(tx, { tenantId: ref.tenantId, conversationId: ref.conversationId, runId: ref.id, role: "user", author: "HARNESS", content: [{ type: "text", text: `[harness] stop-check: ${blocking.map((p) => p.message).join(" ")}` }] });
          return { kind: "continue" };
        }
        // Ownership is checked at the moment of sending: once a person took over, the agent's reply is kept
        // for the record but never reaches the customer.
        const [conv] = await tx.$queryRaw<Array<{ status: string }>>`SELECT status::text AS status FROM "Conversation" WHERE id = ${ref.conversationId} FOR UPDATE`;
        await appendAssistant(conv?.status !== "human");
        return ended(await finishRun(tx, ref, "COMPLETED", conv?.status === "human" ? "end_turn (suppressed: a person owns the conversation)" : "end_turn", run.model, policy));
      }

      case "max_tokens":
        // Truncated: never an answer, and a cut tool_use is never executed. Retry once with a larger limit.
        if (run.maxTokensRetries >= 1) return escalateHere("no_progress", "The model's reply was cut off twice (max_tokens).", "Output limit reached even with the larger limit.");
        await tx.run.update({ where: { id: ref.id }, data: { maxTokensRetries: { increment: 1 } } });
        return { kind: "continue" };

      case "pause_turn":
        if (run.pauseTurns >= MAX_PAUSE_TURNS) return escalateHere("no_progress", `The model paused its turn more than ${MAX_PAUSE_TURNS} times.`, "pause_turn loop.");
        await tx.run.update({ where: { id: ref.id }, data: { pauseTurns: { increment: 1 } } });
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
  }, { timeout: 20_000 });
}

async function checkReply(tx: Parameters<Parameters<RuntimeDeps["db"]["$transaction"]>[0]>[0], ref: RunRef, reply: string) {
  const effects = await tx.effectLedger.findMany({ where: { runId: ref.id }, select: { toolName: true } });
  const succeeded = await tx.toolCall.findMany({ where: { runId: ref.id, status: "SUCCEEDED" }, select: { name: true, input: true } });
  const customerTexts = await tx.message.findMany({ where: { runId: ref.id, author: { in: ["CUSTOMER", "HARNESS"] }, role: "user" }, select: { content: true } });
  const raised = customerTexts.flatMap((m) => (m.content as unknown as ContentBlock[]).filter((b) => b.type === "text" && !b.text.startsWith("[harness]")).flatMap((b) => orderNumbersIn((b as { text: string }).text)));
  const acted = succeeded.some((c) => c.name !== "verify_customer");
  return stopCheck({ reply, effectsDone: [...new Set(effects.map((e) => e.toolName))], ordersRaised: acted ? [...new Set(raised)] : [] });
}
