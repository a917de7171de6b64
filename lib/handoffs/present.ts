// A handoff as every surface presents it (the CLI, the JSON API, the console's queue): the record, flattened.
import { formatCents } from "@/lib/money";
import { parseHandoffPayload } from "./record";

/** The call a handoff is about, as it stands now: its status, and the result the agent read once it has one. */
export type HandoffCall = { status: string; result: unknown };

type HandoffRow = {
  id: string;
  kind: string;
  status: string;
  version: number;
  runId: string | null;
  conversationId: string;
  amountCents: number | null;
  payload: unknown;
  requiredApprovals: number;
  expiresAt: Date | null;
  createdAt: Date;
  decidedAt: Date | null;
  decision: string | null;
  decisionReason: string | null;
  editedInput: unknown;
  claimedById: string | null;
  claimExpiresAt: Date | null;
  decidedById: string | null;
  approvals?: Array<{ staffId: string }>;
  /** the handoff's call (see ./calls `withCalls`); absent or null: none */
  call?: HandoffCall | null;
};

/** A handoff as every surface shows it: the self-contained record, flattened. */
export function presentHandoff(h: HandoffRow, staffNames: Map<string, string> = new Map()) {
  const p = parseHandoffPayload(h.payload);
  return {
    id: h.id,
    kind: h.kind,
    status: h.status,
    version: h.version,
    runId: h.runId,
    conversationId: h.conversationId,
    toolName: p.toolName ?? null,
    proposedInput: p.proposedInput ?? null,
    editedInput: h.editedInput ?? null,
    amountCents: h.amountCents,
    amount: h.amountCents !== null ? formatCents(h.amountCents) : null,
    customer: p.customer,
    orderNumber: p.orderNumber,
    summary: p.asked,
    tried: p.tried,
    rootCause: p.rootCause,
    recommendedAction: p.recommendedAction,
    reason: p.reason,
    trigger: p.trigger,
    rule: p.rule ?? null,
    requiredApprovals: h.requiredApprovals,
    approvals: (h.approvals ?? []).map((a) => ({ staffId: a.staffId, name: staffNames.get(a.staffId) ?? null })),
    expiresAt: h.expiresAt,
    createdAt: h.createdAt,
    claimedBy:
      h.claimedById && h.claimExpiresAt && h.claimExpiresAt > new Date()
        ? { id: h.claimedById, name: staffNames.get(h.claimedById) ?? null, until: h.claimExpiresAt }
        : null,
    decidedBy: h.decidedById ? { id: h.decidedById, name: staffNames.get(h.decidedById) ?? null } : null,
    decision: h.decision,
    decisionReason: h.decisionReason,
    decidedAt: h.decidedAt,
    // What became of the call: an approval's status says what a person decided, this what happened after — a
    // refund can still fail, or be refused where it was to act (lib/runtime/judged-again).
    call: h.call ? { status: h.call.status, result: h.call.result ?? null } : null,
  };
}
export type PresentedHandoff = ReturnType<typeof presentHandoff>;
