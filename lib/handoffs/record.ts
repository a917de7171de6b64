import { z } from "zod";

/**
 * The structured, self-contained handoff record (DESIGN §2.3): a reviewer decides from this alone,
 * without opening the transcript. Stored as Handoff.payload; validated on read.
 */
export const handoffPayloadSchema = z.object({
  customer: z.object({ id: z.string(), name: z.string(), email: z.string() }).nullable(),
  asked: z.string(),
  tried: z.array(z.string()),
  rootCause: z.string(),
  amountCents: z.number().int().nullable(),
  recommendedAction: z.string(),
  reason: z.string(),
  trigger: z.string(),
  orderNumber: z.string().nullable(),
  // approvals only: the exact pending call and the rule that asked
  toolName: z.string().optional(),
  toolUseId: z.string().optional(),
  proposedInput: z.record(z.string(), z.unknown()).optional(),
  rule: z.object({ gate: z.string(), reason: z.string(), policyVersion: z.number().int() }).optional(),
  /** the facts of the case, as the gates and the agent saw them when the handoff was opened */
  order: z
    .object({
      number: z.string(),
      status: z.string(),
      totalCents: z.number().int(),
      refundedCents: z.number().int(),
      shipment: z.object({ carrier: z.string(), tracking: z.string(), status: z.string() }).nullable(),
    })
    .nullable()
    .optional(),
  /** escalations opened by a refusal (above the ceiling): the call that was refused */
  refusedCall: z
    .object({ toolName: z.string(), input: z.record(z.string(), z.unknown()), amountCents: z.number().int().nullable() })
    .optional(),
  /** a specialist (an agent run as a tool) asked for this */
  specialist: z.string().optional(),
});
export type HandoffPayload = z.infer<typeof handoffPayloadSchema>;

export function parseHandoffPayload(raw: unknown): HandoffPayload {
  return handoffPayloadSchema.parse(raw);
}
