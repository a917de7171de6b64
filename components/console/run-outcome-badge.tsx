import { Badge } from "@/components/ui/badge";
import { RUN_OUTCOME_LABEL, type RunOutcome, runOutcomeTone } from "@/lib/console/run-outcome";

/** What a run came to, in words (the colour only repeats it). */
export function RunOutcomeBadge({ outcome }: { outcome: RunOutcome }) {
  return (
    <Badge tone={runOutcomeTone(outcome)} data-outcome={outcome}>
      {RUN_OUTCOME_LABEL[outcome]}
    </Badge>
  );
}
