import type Anthropic from "@anthropic-ai/sdk";
import { randomUUID } from "node:crypto";
import { Prisma } from "@/lib/db/prisma-types";
import { fastSql } from "@/lib/db/sql";
import { getTool } from "@/lib/tools/registry";
import type { RuntimeDeps } from "./deps";
import { fencedCtes, type RunCounters } from "./lease";
import { failpoint } from "./failpoints";
import { actedCall, extendTranscript, runDoneColumns, type RunState } from "./run-state";
import { callRow, recordCallsFenced } from "./tool-gating";
import { executeCall } from "./tool-execution";
import { decideCalls, resultsMessage, TERMINAL } from "./tool-phase";
import { appendMessagesCtes, type AppendMessage, type ContentBlock, type MessageToAppend, type TranscriptRow } from "./transcript";

/**
 * Records a tool_use turn (its model call and assistant message) together with what follows from it, in ONE
 * statement fenced by the lease. The proposed calls are gated as soon as the model proposes them; then
 *  - if every call is refused or allowed and read-only, the allowed ones run at once and the turn is recorded
 *    with the calls, their outcomes and the results message (`after-results-appended`): the tool phase is done;
 *  - otherwise, if none needs a person, the turn is recorded with the gated calls (`after-gate`), for the tool
 *    phase to run;
 *  - otherwise (a call parks or escalates) the turn is recorded alone, and the tool phase gates it in a
 *    transaction (opening the handoff).
 * Nothing runs before it is recorded except read-only calls: if the worker dies first, the turn is simply redone.
 */
export async function recordToolUseTurn(deps: RuntimeDeps, state: RunState, rows: TranscriptRow[], uses: Anthropic.ToolUseBlockParam[], counters: RunCounters, turn: { modelCall: Prisma.Sql; assistant: AppendMessage }): Promise<void> {
  const sql = fastSql(deps.db);
  const { ref: run, policy } = state;
  const assistant: MessageToAppend = { id: randomUUID(), message: turn.assistant };
  const assistantRow = (seq: number): TranscriptRow => ({ seq, role: "assistant", content: turn.assistant.content, author: "AGENT", runId: run.id });
  const { ctx, decided } = await decideCalls(sql, state, rows, Number.POSITIVE_INFINITY, uses, [], deps.gates);
  const verifiedCustomerId = ctx.conversation.verifiedCustomerId;

  if (decided.some((g) => g.handoff)) {
    const { seq } = await fencedCtes<{ seq: number }>(sql, run.id, deps.workerId, deps.leaseMs, counters,
      Prisma.sql`mc AS (${turn.modelCall}), ${appendMessagesCtes([assistant], { from: Prisma.sql`lease` })}`, Prisma.sql`msg.seq FROM msg`);
    state.toolUseTurn = { seq, calls: [], verifiedCustomerId };
    extendTranscript(state, assistantRow(seq));
    return;
  }

  let calls = decided;
  let activeMs = 0;
  if (decided.every((g) => g.status === "DENIED" || (g.status === "APPROVED" && getTool(g.use.name)?.readOnly))) {
    // (Not written yet, so no message seq: the tools do not need it.)
    const executions = await Promise.all(decided.map((g) => (g.status === "APPROVED" ? executeCall(deps, run, callRow(ctx, g, 0), policy, { verifiedCustomerId, settleLater: true }) : null)));
    calls = decided.map((g, i) => {
      const e = executions[i];
      if (!e) return g;
      activeMs += e.unwritten?.activeMs ?? 0;
      return { ...g, status: e.settled.status, result: e.settled.result, isError: e.settled.isError, attempts: e.settled.attempts, nextAttemptAt: e.settled.nextAttemptAt };
    });
    if (calls.every((g) => TERMINAL.has(g.status) && !(g.result as { exhausted?: boolean } | null)?.exhausted)) {
      const results = resultsMessage(run, uses, calls.map((g) => ({ toolUseId: g.use.id, result: g.result, isError: g.isError })));
      const recorded = recordCallsFenced(ctx, calls, Prisma.sql`(SELECT seq FROM msg0)`);
      const out = await fencedCtes<{ assistantSeq: number; seq: number; content: ContentBlock[]; effects: string[]; acted: number }>(sql, run.id, deps.workerId, deps.leaseMs,
        { ...counters, activeMs: (counters.activeMs ?? 0) + activeMs },
        Prisma.sql`mc AS (${turn.modelCall}), ${results.queuedCte}, ${appendMessagesCtes([assistant, results.message], { from: Prisma.sql`lease` })}, ${recorded.ctes}`,
        Prisma.sql`(SELECT seq FROM msg0) AS "assistantSeq", msg.seq, msg.content, ${runDoneColumns(run.id, calls.map((g) => g.id))} FROM msg`);
      extendTranscript(state, assistantRow(out.assistantSeq));
      extendTranscript(state, { seq: out.seq, role: "user", content: out.content, author: "HARNESS", runId: run.id });
      state.done = { effects: out.effects, acted: out.acted + calls.filter((g) => actedCall({ status: g.status, name: g.use.name })).length };
      failpoint("after-results-appended");
      return;
    }
  }

  const recorded = recordCallsFenced(ctx, calls, Prisma.sql`(SELECT seq FROM msg)`);
  const { seq } = await fencedCtes<{ seq: number }>(sql, run.id, deps.workerId, deps.leaseMs, { ...counters, activeMs: (counters.activeMs ?? 0) + activeMs },
    Prisma.sql`mc AS (${turn.modelCall}), ${appendMessagesCtes([assistant], { from: Prisma.sql`lease` })}, ${recorded.ctes}`, Prisma.sql`msg.seq FROM msg`);
  state.toolUseTurn = { seq, calls: recorded.rows(seq), verifiedCustomerId };
  extendTranscript(state, assistantRow(seq));
  failpoint("after-gate");
}
