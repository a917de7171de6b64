// What each model request of a run carried, in a supervisor's words (the run page's model calls): the run's own
// requests carry the transcript — whole, or after a summary cut the rolling summary and the messages after it — and a
// specialist's carry its own brief and work. A failed request recorded no context.

export interface ModelCallContext {
  scope: string | null;
  error: string | null;
  throughSeq: number;
  contextFromSeq: number | null;
  contextSummaryId: string | null;
}

export function carriedInWords(m: ModelCallContext): string {
  if (m.error !== null) return "not recorded (the request failed)";
  if (m.scope !== null) return "the specialist's own brief and work";
  if (m.contextFromSeq === null)
    return m.contextSummaryId ? `the summary of every message through #${m.throughSeq}` : `every message through #${m.throughSeq}`;
  const verbatim = `messages #${m.contextFromSeq}–#${m.throughSeq}`;
  return m.contextSummaryId ? `the summary of #${m.contextFromSeq - 1} and before, then ${verbatim}` : verbatim;
}

/** A cost in USD micro-dollars as the run page shows it (the run's and each request's): "$0.0028". */
export const costInWords = (micros: number): string => `$${(micros / 1_000_000).toFixed(4)}`;

/** A request's counted size and its cost, as the page's table shows them. */
export function requestSizeInWords(m: { requestTokens: number | null; costMicros: number }): string {
  const size = m.requestTokens === null ? "not counted" : `${m.requestTokens.toLocaleString("en-US")} tokens`;
  return `${size} · ${costInWords(m.costMicros)}`;
}
