import { z } from "zod";

// Form and URL values arrive as strings; an empty field means "no filter".
const emptyToUndefined = (v: unknown) => (v === "" || v === null ? undefined : v);
const dollars = z.preprocess(emptyToUndefined, z.coerce.number().finite().nonnegative().max(10_000_000).optional());

/** The queue's filters, as they appear in the URL (?kind=approval&min=100&claimed=me …). */
export const queueFilterSchema = z.object({
  status: z.preprocess(emptyToUndefined, z.enum(["pending", "decided", "all"]).default("pending")),
  kind: z.preprocess(emptyToUndefined, z.enum(["all", "approval", "escalation"]).default("all")),
  /** dollars, inclusive */
  min: dollars,
  max: dollars,
  /** by age: fresh < 15 min, aging 15–60 min, overdue > 1 h */
  age: z.preprocess(emptyToUndefined, z.enum(["any", "fresh", "aging", "overdue"]).default("any")),
  claimed: z.preprocess(emptyToUndefined, z.enum(["anyone", "me", "others", "nobody"]).default("anyone")),
});
export type QueueFilter = z.output<typeof queueFilterSchema>;

export const DEFAULT_QUEUE_FILTER: QueueFilter = queueFilterSchema.parse({});

/** Filters from a URL's search params; anything unreadable falls back to the default for that field. */
export function queueFilterFromParams(params: Record<string, string | string[] | undefined>): QueueFilter {
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) if (typeof v === "string") flat[k] = v;
  const out: Record<string, unknown> = { ...DEFAULT_QUEUE_FILTER };
  for (const key of Object.keys(queueFilterSchema.shape) as (keyof QueueFilter)[]) {
    const one = queueFilterSchema.shape[key].safeParse(flat[key]);
    if (one.success) out[key] = one.data;
  }
  return out as QueueFilter;
}

/** The URL query for a filter, leaving defaults out so links stay short. */
export function queueFilterToParams(filter: QueueFilter): URLSearchParams {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) {
    if (v === undefined || v === DEFAULT_QUEUE_FILTER[k as keyof QueueFilter]) continue;
    params.set(k, String(v));
  }
  return params;
}
