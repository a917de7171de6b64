import type Anthropic from "@anthropic-ai/sdk";
import type { Policy } from "@/lib/policy/policy";
import type { RuntimeDeps } from "./deps";
import { assertLease } from "./lease";
import { failpoint } from "./failpoints";
import { gateToolUse, type RunRef } from "./tool-gating";
import { executeCall } from "./tool-execution";
import { canonicalJson } from "./idempotency";
import { appendMessage, type ContentBlock } from "./transcript";

const TERMINAL = new Set(["SUCCEEDED", "FAILED", "DENIED", "EXPIRED"]);

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
export async function advanceToolPhase(
  deps: RuntimeDeps,
  run: RunRef,
  policy: Policy,
  assistant: { seq: number; content: ContentBlock[] },
): Promise<ToolPhaseOutcome> {
  const uses = assistant.content.filter((b): b is Anthropic.ToolUseBlockParam => b.type === "tool_use");
  const known = await deps.db.toolCall.findMany({ where: { runId: run.id, toolUseId: { in: uses.map((u) => u.id) } } });
  const missing = uses.filter((u) => !known.some((c) => c.toolUseId === u.id));

  if (missing.length) {
    await deps.db.$transaction(async (tx) => {
      await assertLease(tx, run.id, deps.workerId, deps.leaseMs);
      const conversation = await tx.conversation.findUniqueOrThrow({ where: { id: run.conversationId } });
      const last = await tx.toolCall.findFirst({ where: { runId: run.id, messageSeq: { lt: assistant.seq } }, orderBy: [{ messageSeq: "desc" }, { position: "desc" }] });
      let previousCall = last ? { name: last.name, canonicalInput: canonicalJson(last.input) } : null;
      for (const use of uses) {
        const position = uses.indexOf(use);
        const existing = known.find((c) => c.toolUseId === use.id);
        if (!existing) {
          await gateToolUse(tx, { run, policy, conversation, previousCall, now: new Date() }, { id: use.id, name: use.name, input: use.input }, position, assistant.seq);
        }
        previousCall = { name: use.name, canonicalInput: canonicalJson(use.input ?? {}) };
      }
    }, { timeout: 20_000 });
    failpoint("after-gate");
  }

  let calls = await deps.db.toolCall.findMany({ where: { runId: run.id, messageSeq: assistant.seq }, orderBy: { position: "asc" } });
  const now = Date.now();
  // EXECUTING here means a worker died mid-call: run it again; its idempotency key makes that safe.
  const runnable = calls.filter((c) => c.status === "APPROVED" || c.status === "EXECUTING" || (c.status === "RETRY_WAIT" && (!c.nextAttemptAt || c.nextAttemptAt.getTime() <= now)));
  if (runnable.length) {
    // Several tool_use blocks of one reply run concurrently; the next request waits for all of them.
    await Promise.all(runnable.map((c) => executeCall(deps, run, c, policy)));
    calls = await deps.db.toolCall.findMany({ where: { runId: run.id, messageSeq: assistant.seq }, orderBy: { position: "asc" } });
  }

  if (calls.some((c) => c.status === "PARKED")) return { kind: "parked" };
  const waiting = calls.filter((c) => c.status === "RETRY_WAIT" || c.status === "DEFERRED");
  if (waiting.length) {
    const at = new Date(Math.min(...waiting.map((c) => c.nextAttemptAt?.getTime() ?? now + 1000)));
    return { kind: "waiting_for_retry", at };
  }
  if (!calls.every((c) => TERMINAL.has(c.status))) throw new Error(`tool phase of run ${run.id} left calls unsettled`);

  const exhausted = calls.find((c) => c.isError && (c.result as { exhausted?: boolean } | null)?.exhausted);
  await appendResults(deps, run, uses, calls);
  failpoint("after-results-appended");
  if (exhausted) return { kind: "dead_letter", reason: `${exhausted.name} kept failing: ${(exhausted.result as { message?: string }).message ?? ""}` };
  return { kind: "results_appended" };
}

/** The ONE user message answering an assistant message: every tool_result first, then queued customer text. */
async function appendResults(deps: RuntimeDeps, run: RunRef, uses: Anthropic.ToolUseBlockParam[], calls: Array<{ toolUseId: string; result: unknown; isError: boolean }>) {
  await deps.db.$transaction(async (tx) => {
    await assertLease(tx, run.id, deps.workerId, deps.leaseMs);
    const results: ContentBlock[] = uses.map((use) => {
      const call = calls.find((c) => c.toolUseId === use.id)!;
      return { type: "tool_result", tool_use_id: use.id, content: JSON.stringify(call.result ?? {}), ...(call.isError ? { is_error: true } : {}) };
    });
    // Customer text that arrived while the calls were pending reaches the model right after the results.
    const queued = await tx.message.findMany({ where: { conversationId: run.conversationId, pendingDelivery: true }, orderBy: { seq: "asc" } });
    if (queued.length) {
      await tx.message.updateMany({ where: { id: { in: queued.map((q) => q.id) } }, data: { pendingDelivery: false, runId: run.id } });
    }
    const texts: ContentBlock[] = queued.map((q) => ({ type: "text", text: q.displayText ?? "" }));
    await appendMessage(tx, { tenantId: run.tenantId, conversationId: run.conversationId, runId: run.id, role: "user", author: "HARNESS", content: [...results, ...texts] });
  });
}
