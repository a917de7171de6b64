import { z } from "zod";
import { createHash } from "node:crypto";
import type { ToolDefinition } from "./types";
import { verifyCustomer } from "./verify-customer";
import { sendVerificationCode } from "./send-verification-code";
import { lookupOrder } from "./lookup-order";
import { listOrders } from "./list-orders";
import { refundOrder } from "./refund-order";
import { createReplacement } from "./create-replacement";
import { cancelOrder } from "./cancel-order";
import { updateShippingAddress } from "./update-shipping-address";
import { escalateToHuman } from "./escalate-to-human";
import { specialistTools } from "./ask-specialist";

/** Every tool the product knows. A tenant's policy allowlist narrows what a run may call. */
export const tools: readonly ToolDefinition[] = [
  verifyCustomer,
  sendVerificationCode,
  lookupOrder,
  listOrders,
  refundOrder,
  createReplacement,
  cancelOrder,
  updateShippingAddress,
  escalateToHuman,
  ...specialistTools,
];

const byName = new Map(tools.map((t) => [t.name, t]));

export function getTool(name: string): ToolDefinition | undefined {
  return byName.get(name);
}

/** The tool definitions as the Messages API wants them: name, description, JSON schema of the zod input. */
export function toolDefinitionsForModel() {
  return tools.map((t) => {
    const { $schema: _drop, ...schema } = z.toJSONSchema(t.inputSchema, { io: "input" }) as Record<string, unknown>;
    return { name: t.name, description: t.description, input_schema: schema as { type: "object"; [k: string]: unknown } };
  });
}

/** A short hash of the definitions: recorded on each run so a transcript says which tools the model saw. */
export const toolsVersion = createHash("sha256").update(JSON.stringify(toolDefinitionsForModel())).digest("hex").slice(0, 12);
