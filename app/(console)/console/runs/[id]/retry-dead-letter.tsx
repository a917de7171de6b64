"use client";
import { useMutation } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { callAction, type ConsoleError } from "@/components/console/api";
import { Button } from "@/components/ui/button";
import { Notice } from "@/components/ui/notice";
import { retryDeadLetterAction } from "@/lib/actions/console";

/**
 * A dead-lettered run's retry: the run goes back to the worker (and continues at once on the server); the page is
 * then re-read. A second click, or someone else's retry first, is answered with the server's refusal, which stays
 * until the reader reloads: the page read again shows no dead letter, so this section, and the refusal in it, would
 * go at once.
 */
export function RetryDeadLetter({ runId }: { runId: string }) {
  const router = useRouter();
  const retry = useMutation<{ runId: string; phase: string }, ConsoleError>({
    mutationFn: () => callAction(() => retryDeadLetterAction({ runId })),
    onSuccess: () => router.refresh(),
  });
  return (
    <div className="space-y-2" data-testid="dead-letter">
      <p className="text-sm">
        This run stopped for good after its retries ran out. Retrying puts it back for the worker: it continues from its transcript with a
        fresh request budget, and its escalation is marked resolved by you.
      </p>
      <Button variant="primary" disabled={retry.isPending || retry.isSuccess} onClick={() => retry.mutate()}>
        {retry.isPending ? "Retrying…" : "Retry this run"}
      </Button>
      {retry.isSuccess ? (
        <Notice tone="success" data-testid="retry-result">
          Retried: the run is {retry.data.phase.toLowerCase().replace(/_/g, " ")}.
        </Notice>
      ) : null}
      {retry.error ? (
        <Notice tone="error" data-testid="retry-error">
          {retry.error.message}
          <Button size="sm" className="ml-2" onClick={() => router.refresh()}>
            Reload
          </Button>
        </Notice>
      ) : null}
    </div>
  );
}
