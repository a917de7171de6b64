/** Escalation triggers in words (Handoff.payload.trigger); an unknown trigger is shown as it is. */
export const ESCALATION_REASON_LABEL: Record<string, string> = {
  customer_request: "The customer asked for a person",
  policy_gap: "Outside the policy (an exception or a gap)",
  policy_ceiling: "Over the refund ceiling",
  no_progress: "The agent could not make progress",
  owner_deactivated: "The person holding it was deactivated",
};
