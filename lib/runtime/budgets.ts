// The run's budgets (turns, tokens, working time, model spend), checked before every model request — the run's own
// (./model-turn) and each specialist's (./agent-as-tool).
import type { RunState } from "./run-state";

/**
 * The budget a run has used up, if any — checked before every model request (the run's own and its specialists'):
 * turns, tokens, working time, and model spend in USD from the usage the API reported (run, conversation, shop-day).
 */
export function exhaustedBudget(state: RunState): { reason: string; rootCause: string } | null {
  const { counters: run, policy, spend } = state;
  const b = policy.rules.budgets;
  const usd = (micros: number) => `$${(micros / 1_000_000).toFixed(2)}`;
  if (run.turnsUsed >= run.maxTurns)
    return { reason: `The run used all ${run.maxTurns} model turns.`, rootCause: "Turn budget exhausted before the request was resolved." };
  if (run.inputTokens + run.outputTokens >= run.tokenBudget)
    return { reason: `The run used its token budget (${run.tokenBudget}).`, rootCause: "Token budget exhausted." };
  if (run.activeMs >= b.wallTimeSeconds * 1000)
    return { reason: `The run used its ${b.wallTimeSeconds}s of working time.`, rootCause: "Wall-time budget exhausted." };
  if (run.costMicros >= b.maxRunCostMicros)
    return { reason: `The run spent its model budget (${usd(b.maxRunCostMicros)}).`, rootCause: "Run spend budget exhausted." };
  if (spend.conversation >= b.maxConversationCostMicros)
    return {
      reason: `The conversation spent its model budget (${usd(b.maxConversationCostMicros)}).`,
      rootCause: "Conversation spend budget exhausted.",
    };
  if (spend.shopDay >= b.maxShopDailyCostMicros)
    return {
      reason: `The shop spent its model budget for today (${usd(b.maxShopDailyCostMicros)}).`,
      rootCause: "Daily shop spend budget exhausted.",
    };
  return null;
}
