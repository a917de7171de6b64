import type Anthropic from "@anthropic-ai/sdk";
import type { RuntimeDeps } from "./deps";
import type { RunState } from "./run-state";
import { callsOfMessage, type ToolCallRow } from "./tool-call-rows";
import { assertLease } from "./lease";
import { failpoint } from "./failpoints";
import { gateToolUse, type RunRef } from "./tool-gating";
import type { TranscriptRow } from "./transcript";
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
export async function advanceToolPhase(deps: RuntimeDeps, state: RunState, assistant: { seq: number; content: ContentBlock[] }, rows: TranscriptRow[]): Promise<ToolPhaseOutcome> {
  const { ref: run, policy } = state;
  const uses = assistant.content.filter((b): b is Anthropic.ToolUseBlockParam => b.type === "tool_use");
  const nowMs = Date.now();
  // A deferred call is gated again once its time comes (the condition that deferred it may have cleared).
  const dueDeferred = (c: ToolCallRow) => c.status === "DEFERRED" && (!c.nextAttemptAt || c.nextAttemptAt.getTime() <= nowMs);
  const all = await callsOfMessage(deps.db, run.id, assistant.seq);
  const known = all.filter((c) => !dueDeferred(c));
  const regate = all.filter(dueDeferred);
  const missing = uses.filter((u) => !known.some((c) => c.toolUseId === u.id));

  const gated: ToolCallRow[] = [];
  if (missing.length) {
    const previous = previousToolUse(rows, run, assistant.seq);
    await deps.db.$transaction(async (tx) => {
      await assertLease(tx, run.id, deps.workerId, deps.leaseMs);
      const [conversation] = await tx.$queryRaw<Array<{ verifiedCustomerId: string | null; verificationExpiresAt: Date | null }>>`
        SELECT "verifiedCustomerId", "verificationExpiresAt" FROM "Conversation" WHERE id = ${run.conversationId}`;
      let previousCall = previous;
      // Its earlier gate decisions stay in the audit trail; the call row is decided afresh.
      if (regate.length) await tx.toolCall.deleteMany({ where: { id: { in: regate.map((c) => c.id) } } });
      for (const use of uses) {
        const position = uses.indexOf(use);
        const existing = known.find((c) => c.toolUseId === use.id);
        if (!existing) {
          gated.push(await gateToolUse(tx, { run, policy, conversation: conversation!, previousCall, now: new Date() }, { id: use.id, name: use.name, input: use.input }, position, assistant.seq, deps.gates));
        }
        previousCall = { name: use.name, canonicalInput: canonicalJson(use.input ?? {}) };
      }
    }, { timeout: 20_000 });
    failpoint("after-gate");
  }

  let calls = [...known, ...gated].sort((a, b) => a.position - b.position);
  const now = Date.now();
  // EXECUTING here means a worker died mid-call: run it again; its idempotency key makes that safe.
  const runnable = calls.filter((c) => c.status === "APPROVED" || c.status === "EXECUTING" || (c.status === "RETRY_WAIT" && (!c.nextAttemptAt || c.nextAttemptAt.getTime() <= now)));
  if (runnable.length) {
    // Several tool_use blocks of one reply run concurrently; the next request waits for all of them.
    const settled = await Promise.all(runnable.map((c) => executeCall(deps, run, c, policy)));
    calls = calls.map((c) => {
      const i = runnable.indexOf(c);
      return i === -1 ? c : { ...c, ...settled[i]! };
    });
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
async function appendResults(deps: RuntimeDeps, run: RunRef, uses: Anthropic.ToolUseBlockParam[], calls: ToolCallRow[]) {
  await deps.db.$transaction(async (tx) => {
    await assertLease(tx, run.id, deps.workerId, deps.leaseMs);
    const results: ContentBlock[] = uses.map((use) => {
      const call = calls.find((c) => c.toolUseId === use.id)!;
      return { type: "tool_result", tool_use_id: use.id, content: JSON.stringify(call.result ?? {}), ...(call.isError ? { is_error: true } : {}) };
    });
    // Customer text that arrived while the calls were pending reaches the model right after the results.
    const queued = await tx.$queryRaw<Array<{ displayText: string | null }>>`
      UPDATE "Message" SET "pendingDelivery" = false, "runId" = ${run.id}
      WHERE id IN (SELECT id FROM "Message" WHERE "conversationId" = ${run.conversationId} AND "pendingDelivery" ORDER BY seq FOR UPDATE)
      RETURNING seq, "displayText"`;
    const texts: ContentBlock[] = (queued as Array<{ seq?: number; displayText: string | null }>)
      .sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0))
      .map((q) => ({ type: "text", text: q.displayText ?? "" }));
    await appendMessage(tx, { tenantId: run.tenantId, conversationId: run.conversationId, runId: run.id, role: "user", author: "HARNESS", content: [...results, ...texts] });
  });
}

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
