import { Prisma, type PrismaClient } from "@/lib/db/prisma-types";
import type { Policy } from "@/lib/policy/policy";
import { loadPolicy } from "./policy";
import type { RunRef } from "./tool-gating";

/** The budgets a run has used and its caps: read once per advance, kept current in memory while the lease is held. */
export interface RunCountersState {
  turnsUsed: number;
  maxTurns: number;
  inputTokens: number;
  outputTokens: number;
  tokenBudget: number;
  activeMs: number;
  requestAttempts: number;
  maxTokensRetries: number;
  pauseTurns: number;
  corrections: number;
}

/**
 * What one advance of a run works with. Rebuilt from the database each time a worker claims the run; while it
 * holds the lease nobody else writes the run, so the copy stays true and saves a read per step.
 */
export interface RunState {
  ref: RunRef;
  policy: Policy;
  model: string;
  counters: RunCountersState;
}

export type RunStateRow = RunCountersState & { id: string; tenantId: string; conversationId: string; policyVersion: number; model: string };

export const RUN_STATE_COLUMNS = Prisma.sql`id, "tenantId", "conversationId", "policyVersion", model, "turnsUsed", "maxTurns", "inputTokens", "outputTokens",
  "tokenBudget", "activeMs", "requestAttempts", "maxTokensRetries", "pauseTurns", corrections`;

/** Builds the state from the row a claim returned, or reads it (when the lease was taken at creation or resume). */
export async function loadRunState(db: PrismaClient, runId: string, claimed?: RunStateRow | null): Promise<RunState> {
  const [row] = claimed ? [claimed] : await db.$queryRaw<RunStateRow[]>`SELECT ${RUN_STATE_COLUMNS} FROM "Run" WHERE id = ${runId}`;
  if (!row) throw new Error(`run ${runId} not found`);
  const { id, tenantId, conversationId, policyVersion, model, ...counters } = row;
  return { ref: { id, tenantId, conversationId }, policy: await loadPolicy(db, tenantId, policyVersion), model, counters };
}
