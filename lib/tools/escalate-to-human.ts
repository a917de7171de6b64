import { z } from "zod";
import { defineTool } from "./types";

export const escalateToHumanInputSchema = z.object({
  trigger: z
    .enum(["customer_request", "policy_gap", "no_progress"])
    .describe(
      "customer_request: they asked for a person; policy_gap: needs an exception or no policy covers it; no_progress: a tool is down, data conflicts, or you are stuck",
    ),
  summary: z.string().min(1).max(2000).describe("What the customer asked, self-contained"),
  tried: z.string().max(2000).default("").describe("What you already tried"),
  root_cause: z.string().max(1000).default("").describe("Your diagnosis of the root cause"),
  recommended_action: z.string().max(1000).default("").describe("What a person should do"),
  order_number: z.string().max(40).optional(),
  amount_cents: z.number().int().nonnegative().optional().describe("Amount in dispute, in cents"),
});

export const escalateToHuman = defineTool({
  name: "escalate_to_human",
  description:
    "Hand the conversation to a person. Use at once when the customer asks for a human; when the request needs a policy exception or no policy covers it; or when you cannot make progress. Write a self-contained record: a person must be able to act without reading the transcript.",
  inputSchema: escalateToHumanInputSchema,
  sideEffect: false,
  accountAction: false,
  async facts(input) {
    return { orderNumber: input.order_number, amountCents: input.amount_cents, summary: `Escalate: ${input.trigger}` };
  },
  escalation: (input) => ({
    trigger: input.trigger,
    asked: input.summary,
    tried: input.tried ? [input.tried] : [],
    rootCause: input.root_cause,
    recommendedAction: input.recommended_action,
    orderNumber: input.order_number,
    amountCents: input.amount_cents ?? null,
    reason:
      input.trigger === "customer_request"
        ? "The customer asked for a person."
        : input.trigger === "policy_gap"
          ? "Needs a policy exception or falls in a policy gap."
          : "The agent could not make progress.",
  }),
  async execute() {
    // The runtime opens the escalation with this result (one per conversation while pending) and adds its id.
    return {
      status: "escalated",
      message: "A person from the team will take over this conversation. Tell the customer honestly; do not promise an outcome.",
    };
  },
});
