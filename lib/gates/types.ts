import type { PolicyRules } from "@/lib/policy/policy";
import type { CallFacts } from "@/lib/tools/types";

export type GateDecisionKind = "allow" | "deny" | "ask" | "defer";

export interface GateVerdict {
  decision: GateDecisionKind;
  /** Written for the model: says what to do next ("call verify_customer first"). */
  reason: string;
  /** deny only: the harness opens the escalation itself, so it cannot be retried around. */
  escalate?: boolean;
  /** ask only: how many distinct people must approve. */
  requiredApprovals?: number;
  errorCategory?: "business_rule" | "permission";
  /** deny only: the model can fix it (e.g. verify first) and try again. */
  retryable?: boolean;
  /** deny only: structured facts for the model's tool_result (e.g. which verification level is needed) */
  details?: Record<string, unknown>;
}

/** What a gate may look at: the proposed call, the run's durable state, the tenant's policy. */
export interface GateInput {
  toolName: string;
  input: Record<string, unknown>;
  canonicalInput: string;
  facts: CallFacts;
  isKnownTool: boolean;
  accountAction: boolean;
  sideEffect: boolean;
  state: {
    verifiedCustomerId: string | null;
    verificationExpiresAt: Date | null;
    /** how the customer proved who they are (lib/identity/levels); some actions need more than others */
    verificationLevel?: string | null;
    now: Date;
    /** The previous call of this run (name + canonical input), for identical-call detection. */
    previousCall: { name: string; canonicalInput: string } | null;
  };
  policy: { version: number; rules: PolicyRules };
  /** Set when a reviewer's edit is re-gated: their authority replaces the approval band. */
  reviewer?: { id: string; name: string; authorityLimitCents: number | null };
}

export interface Gate {
  name: string;
  /** Returns null when the gate has nothing to say about this call. */
  check(input: GateInput): GateVerdict | null;
}
