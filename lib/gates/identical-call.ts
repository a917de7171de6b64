import type { Gate } from "./types";

/** The same tool with the same arguments twice in a row is a loop, not progress. */
export const identicalCallGate: Gate = {
  name: "identical_call",
  check({ toolName, canonicalInput, state }) {
    const prev = state.previousCall;
    if (prev && prev.name === toolName && prev.canonicalInput === canonicalInput) {
      return {
        decision: "deny",
        reason: `You just called ${toolName} with exactly these arguments. Use the earlier result instead of repeating the call; if you are stuck, escalate_to_human.`,
        errorCategory: "business_rule",
      };
    }
    return null;
  },
};
