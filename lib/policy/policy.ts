import { z } from "zod";

/** The per-tenant policy, versioned: every gate decision records the version it was made under. */
export const policyRulesSchema = z.object({
  refund: z.object({
    autoMaxCents: z.number().int().nonnegative(),
    approvalMaxCents: z.number().int().nonnegative(),
    twoApproversFromCents: z.number().int().nonnegative(),
  }),
  replacement: z.object({ autoMaxCents: z.number().int().nonnegative() }),
  cancellation: z.object({ requiresApproval: z.boolean() }),
  addressChange: z.object({ allowedStatuses: z.array(z.string()) }),
  approvalTtlHours: z.number().positive(),
  verificationTtlMinutes: z.number().positive(),
  allowedTools: z.array(z.string()),
  budgets: z.object({
    maxTurns: z.number().int().positive(),
    tokenBudget: z.number().int().positive(),
    wallTimeSeconds: z.number().int().positive(),
    maxRequestAttempts: z.number().int().positive(),
    maxToolAttempts: z.number().int().positive(),
  }),
});
export type PolicyRules = z.infer<typeof policyRulesSchema>;

export interface Policy {
  version: number;
  rules: PolicyRules;
}
