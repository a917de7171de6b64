// Rows tests write directly (behind the runtime) when only a few of their columns matter to the test.

/** A Run's columns that such a test does not care about: its budgets, versions and model. */
export const runColumns = {
  maxTurns: 5,
  tokenBudget: 1000,
  policyVersion: 1,
  promptVersion: "p",
  toolsVersion: "t",
  model: "m",
} as const;
