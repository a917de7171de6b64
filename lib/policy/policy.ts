import { z } from "zod";

const cents = () => z.number().int().nonnegative();

/**
 * The per-tenant policy, versioned: every gate decision records the version it was made under, and a run keeps the
 * version it started with. Money limits apply to TOTALS, never to one call: what was already refunded (or replaced)
 * on the order, plus what is parked or approved-but-not-run on it, plus every other call of the same model turn —
 * so splitting a request never gets around a band. Fields added after v1 have defaults, so every stored version
 * still reads.
 */
export const policyRulesSchema = z.object({
  refund: z.object({
    /** a refund whose order total stays within this runs automatically */
    autoMaxCents: cents(),
    /** above this total a refund is refused and escalated to a person (no reviewer can approve it in the queue) */
    approvalMaxCents: cents(),
    /** from this total, two different reviewers must approve */
    twoApproversFromCents: cents(),
    /** automatic refunds for one customer (all orders) within the window; beyond it a person approves */
    autoPerCustomerMaxCents: cents().default(15_000),
    autoPerCustomerWindowDays: z.number().int().positive().max(366).default(30),
  }),
  replacement: z.object({
    /** a replacement whose value (with the order's earlier replacements) stays within this runs automatically */
    autoMaxCents: cents(),
    autoPerCustomerMaxCents: cents().default(30_000),
    autoPerCustomerWindowDays: z.number().int().positive().max(366).default(30),
  }),
  cancellation: z.object({ requiresApproval: z.boolean() }),
  addressChange: z.object({ allowedStatuses: z.array(z.string()) }),
  approvalTtlHours: z.number().positive(),
  verificationTtlMinutes: z.number().positive(),
  /** the tools the model is offered (and may call); anything else is refused */
  allowedTools: z.array(z.string()),
  budgets: z.object({
    maxTurns: z.number().int().positive(),
    tokenBudget: z.number().int().positive(),
    wallTimeSeconds: z.number().int().positive(),
    /** model requests per run, the SDK's own retries included */
    maxRequestAttempts: z.number().int().positive(),
    maxToolAttempts: z.number().int().positive(),
    /** model spend in USD micro-dollars (1 USD = 1,000,000), from the usage the API reports */
    maxRunCostMicros: z.number().int().positive().default(500_000),
    maxConversationCostMicros: z.number().int().positive().default(2_000_000),
    maxShopDailyCostMicros: z.number().int().positive().default(200_000_000),
  }),
  /** what the public widget accepts, per client IP, conversation and shop (counters shared by every process) */
  limits: z
    .object({
      messagesPerMinutePerConversation: z.number().int().positive().default(12),
      messagesPerMinutePerIp: z.number().int().positive().default(30),
      messagesPerMinutePerShop: z.number().int().positive().default(1200),
      conversationsPerHourPerIp: z.number().int().positive().default(30),
    })
    .default({
      messagesPerMinutePerConversation: 12,
      messagesPerMinutePerIp: 30,
      messagesPerMinutePerShop: 1200,
      conversationsPerHourPerIp: 30,
    }),
});
export type PolicyRules = z.infer<typeof policyRulesSchema>;
/** What an admin writes (defaults not yet applied). */
export type PolicyRulesInput = z.input<typeof policyRulesSchema>;

export interface Policy {
  version: number;
  rules: PolicyRules;
}
