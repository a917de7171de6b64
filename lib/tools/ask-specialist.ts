import { z } from "zod";
import { SPECIALISTS } from "@/lib/agents/specialists";
import { defineTool, type ToolDefinition } from "./types";

export const askSpecialistInputSchema = z.object({
  task: z
    .string()
    .min(1)
    .max(4000)
    .describe("What the specialist should do, self-contained: the customer's request in their words, the order, the amounts"),
  order_number: z.string().min(1).max(40).optional().describe("The order it is about, e.g. A-1002"),
});

/**
 * A specialist run as a tool: the runtime runs its own model turns with its own instructions and tools (see
 * lib/runtime/agent-as-tool.ts), and its final report is this call's result. It changes nothing by itself: every call
 * it makes is gated like the agent's own.
 */
export const specialistTools: ToolDefinition<z.infer<typeof askSpecialistInputSchema>>[] = SPECIALISTS.map((s) =>
  defineTool({
    name: s.tool,
    description: `Hand part of the case to the ${s.title.toLowerCase()}: it works with its own tools (${s.tools.join(", ")}) and reports back what it found and did. Give it a self-contained task.`,
    inputSchema: askSpecialistInputSchema,
    sideEffect: false,
    accountAction: false,
    agent: s.tool,
    async facts(input) {
      return {
        summary: `${s.title}: ${input.task.slice(0, 120)}`,
        ...(input.order_number ? { orderNumber: input.order_number.trim().toUpperCase() } : {}),
      };
    },
    async execute() {
      throw new Error(`${s.tool} is an agent run as a tool: the runtime runs it (lib/runtime/agent-as-tool.ts)`);
    },
  }),
);
