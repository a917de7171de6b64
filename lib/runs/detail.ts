// A run as the model saw it — the record every inspecting surface shows (the console's run page, the JSON API's
// /runs/{id}, the CLI's `run`): the messages of its last request and everything recorded around it.
import type { PrismaTx } from "@/lib/db/prisma-types";
import { specialistTree } from "@/lib/agents/tree";
import { AppError } from "@/lib/errors";
import { callAmong } from "@/lib/handoffs/calls";
import { presentHandoff } from "@/lib/handoffs/present";
import { staffNames } from "@/lib/staff-names";
import { requestMessages } from "@/lib/runtime/context";
import { summaryOf } from "@/lib/store/context-summaries";

/**
 * A run as the model saw it: the messages array of its last request — after a summary cut, the rolling summary it
 * started with and the messages after it, rebuilt as lib/runtime/context built them — and everything recorded around it.
 */
export async function runDetail(db: PrismaTx, runId: string, tenantId?: string) {
  const run = await db.run.findFirst({ where: { id: runId, ...(tenantId ? { tenantId } : {}) } });
  if (!run) throw new AppError("NOT_FOUND", "This run was not found.");
  const [modelCalls, toolCalls, gateDecisions, effects, handoffs, rows, agentTurns] = await Promise.all([
    db.modelCall.findMany({ where: { runId }, orderBy: { createdAt: "asc" } }),
    db.toolCall.findMany({ where: { runId }, orderBy: [{ messageSeq: "asc" }, { position: "asc" }] }),
    db.gateDecision.findMany({ where: { runId }, orderBy: { createdAt: "asc" } }),
    db.effectLedger.findMany({ where: { runId }, orderBy: { createdAt: "asc" } }),
    db.handoff.findMany({ where: { runId }, include: { approvals: true } }),
    db.message.findMany({
      where: { conversationId: run.conversationId, inTranscript: true },
      orderBy: { seq: "asc" },
      select: { seq: true, role: true, content: true, runId: true, author: true },
    }),
    db.agentTurn.findMany({ where: { runId }, orderBy: { createdAt: "asc" } }),
  ]);
  const lastSeq = modelCalls.length ? Math.max(...modelCalls.map((m) => m.throughSeq)) : (rows[rows.length - 1]?.seq ?? 0);
  // The summary the run's last request started with, as its newest answered call of its own recorded it (a
  // specialist's calls send the specialist's messages; a failed request records no context: the one before is nearest).
  const summaryId = modelCalls.findLast((m) => m.scope === null && m.error === null)?.contextSummaryId ?? null;
  const [names, summaryRow] = await Promise.all([
    staffNames(db, run.tenantId),
    summaryId ? db.contextSummary.findFirst({ where: { id: summaryId, tenantId: run.tenantId } }) : null,
  ]);
  return {
    run,
    messages: requestMessages(
      rows.filter((r) => r.seq <= lastSeq),
      summaryRow && summaryOf(summaryRow),
    ),
    transcript: rows,
    modelCalls,
    toolCalls,
    gateDecisions,
    effects,
    handoffs: handoffs.map((h) => presentHandoff({ ...h, call: callAmong(toolCalls, h.toolCallId) }, names)),
    /** the specialists the agent consulted, as a tree (lib/agents/tree) */
    specialists: specialistTree(toolCalls, agentTurns, modelCalls),
  };
}
