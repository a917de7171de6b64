import type { Gate } from "./types";

/** A tool outside the tenant's allowlist (or unknown to the product) never runs. */
export const allowlistGate: Gate = {
  name: "allowlist",
  check({ toolName, isKnownTool, policy }) {
    if (!isKnownTool || !policy.rules.allowedTools.includes(toolName)) {
      return {
        decision: "deny",
        reason: `The tool ${toolName} is not available in this shop. Do not call it again; use the listed tools or escalate_to_human.`,
        errorCategory: "permission",
      };
    }
    return null;
  },
};
