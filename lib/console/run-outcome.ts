import type { Prisma } from "@/lib/db/prisma-types";

// What a run came to, for people: defined once, here, both as a classifier of a run's facts (for display) and
// as a `where` (for filtering in the database). The two are built from the same ordered rules, and a test checks
// they agree on every case. A run's phase alone is not enough: the agent's escalate_to_human tool completes the
// run with end_turn, so an escalated conversation can sit in a COMPLETED run.

export const RUN_OUTCOMES = [
  "running",
  "waiting",
  "dead_letter",
  "escalated",
  "expired",
  "denied",
  "approved",
  "resolved_by_agent",
] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

/** The outcomes of a finished run (the filter's choices; running/waiting are not final). */
export const FINAL_RUN_OUTCOMES = ["resolved_by_agent", "approved", "denied", "escalated", "expired", "dead_letter"] as const;

export const RUN_OUTCOME_LABEL: Record<RunOutcome, string> = {
  running: "Running",
  waiting: "Waiting for approval",
  dead_letter: "Dead letter",
  escalated: "Escalated to a person",
  expired: "Approval expired",
  denied: "Denied by a reviewer",
  approved: "Approved by a reviewer",
  resolved_by_agent: "Resolved by the agent",
};

/** What the classification reads of a run. */
export interface RunOutcomeFacts {
  phase: string;
  /** Run.outcome: why it ended ("end_turn", "policy_ceiling: …", …) */
  outcome: string | null;
  handoffs: ReadonlyArray<{ kind: string; status: string }>;
  toolCalls: ReadonlyArray<{ name: string; status: string }>;
}

/** The run's reply was held back because a person had taken the conversation over (lib/runtime/model-turn `SUPPRESSED_REPLY_OUTCOME`). */
const SUPPRESSED_PREFIX = "end_turn (suppressed";

interface Rule {
  outcome: RunOutcome;
  matches: (f: RunOutcomeFacts) => boolean;
  where: Prisma.RunWhereInput;
}

const hasApproval = (f: RunOutcomeFacts, statuses: string[]) =>
  f.handoffs.some((h) => h.kind === "APPROVAL" && statuses.includes(h.status));

/**
 * First match wins. Unfinished runs are named by their phase; a finished run by the step that most needs a
 * supervisor's eye: a person took over (or must), then an approval nobody decided, then a denial, then an
 * approval; otherwise the agent resolved it alone.
 */
const RULES: readonly Rule[] = [
  {
    outcome: "running",
    matches: (f) => f.phase === "RUNNING" || f.phase === "WAITING_FOR_RETRY",
    where: { phase: { in: ["RUNNING", "WAITING_FOR_RETRY"] } },
  },
  { outcome: "waiting", matches: (f) => f.phase === "WAITING_FOR_APPROVAL", where: { phase: "WAITING_FOR_APPROVAL" } },
  { outcome: "dead_letter", matches: (f) => f.phase === "DEAD_LETTER", where: { phase: "DEAD_LETTER" } },
  {
    outcome: "escalated",
    matches: (f) =>
      f.phase === "ESCALATED" ||
      f.handoffs.some((h) => h.kind === "ESCALATION") ||
      f.toolCalls.some((c) => c.name === "escalate_to_human" && c.status === "SUCCEEDED") ||
      (f.outcome ?? "").startsWith(SUPPRESSED_PREFIX),
    where: {
      OR: [
        { phase: "ESCALATED" },
        { handoffs: { some: { kind: "ESCALATION" } } },
        // The conversation's open escalation may belong to an earlier run: the call itself says this run escalated.
        { toolCalls: { some: { name: "escalate_to_human", status: "SUCCEEDED" } } },
        { outcome: { startsWith: SUPPRESSED_PREFIX } },
      ],
    },
  },
  {
    outcome: "expired",
    matches: (f) => hasApproval(f, ["EXPIRED"]),
    where: { handoffs: { some: { kind: "APPROVAL", status: "EXPIRED" } } },
  },
  {
    outcome: "denied",
    matches: (f) => hasApproval(f, ["DENIED"]),
    where: { handoffs: { some: { kind: "APPROVAL", status: "DENIED" } } },
  },
  {
    outcome: "approved",
    matches: (f) => hasApproval(f, ["APPROVED", "EDITED"]),
    where: { handoffs: { some: { kind: "APPROVAL", status: { in: ["APPROVED", "EDITED"] } } } },
  },
  { outcome: "resolved_by_agent", matches: () => true, where: {} },
];

/** What a run came to (see RULES). */
export function runOutcome(facts: RunOutcomeFacts): RunOutcome {
  return RULES.find((r) => r.matches(facts))!.outcome;
}

/** The runs whose runOutcome is `outcome`, as a Prisma `where`: its rule, and none of the rules before it. */
export function runOutcomeWhere(outcome: RunOutcome): Prisma.RunWhereInput {
  const at = RULES.findIndex((r) => r.outcome === outcome);
  const rule = RULES[at]!;
  const earlier = RULES.slice(0, at).map((r) => r.where);
  return { AND: [rule.where, ...(earlier.length ? [{ NOT: earlier }] : [])] };
}

/** Whether an outcome is a good result, a bad one or neither: the badge's tone (its text always says which). */
export function runOutcomeTone(outcome: RunOutcome): "green" | "red" | "amber" | "blue" | "violet" | "gray" {
  switch (outcome) {
    case "resolved_by_agent":
    case "approved":
      return "green";
    case "dead_letter":
      return "red";
    case "denied":
      return "gray";
    case "escalated":
    case "expired":
      return "amber";
    case "waiting":
      return "violet";
    case "running":
      return "blue";
  }
}
