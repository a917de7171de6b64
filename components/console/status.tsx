import { Badge, type BadgeTone } from "@/components/ui/badge";

const HANDOFF_TONE: Record<string, BadgeTone> = {
  PENDING: "blue",
  APPROVED: "green",
  EDITED: "green",
  DENIED: "red",
  EXPIRED: "amber",
  RESOLVED: "gray",
  CANCELLED: "gray",
};

export function HandoffStatusBadge({ status }: { status: string }) {
  return <Badge tone={HANDOFF_TONE[status] ?? "gray"}>{status.toLowerCase()}</Badge>;
}

export function KindBadge({ kind }: { kind: string }) {
  return <Badge tone={kind === "APPROVAL" ? "violet" : "amber"}>{kind === "APPROVAL" ? "approval" : "escalation"}</Badge>;
}

const PHASE_TONE: Record<string, BadgeTone> = {
  RUNNING: "blue",
  WAITING_FOR_APPROVAL: "violet",
  WAITING_FOR_RETRY: "amber",
  COMPLETED: "green",
  ESCALATED: "amber",
  DEAD_LETTER: "red",
};

export function PhaseBadge({ phase }: { phase: string }) {
  return (
    <Badge tone={PHASE_TONE[phase] ?? "gray"} data-phase={phase}>
      {phase}
    </Badge>
  );
}

/** "Approve: Refund $250.00 on A-1002." → "Refund $250.00 on A-1002": the item's title in lists and headings. */
export function handoffTitle(h: { kind: string; recommendedAction: string; reason: string; trigger: string }): string {
  if (h.kind === "APPROVAL") return h.recommendedAction.replace(/^Approve:\s*/i, "").replace(/\.$/, "");
  return `Escalation: ${h.reason}`;
}
