/** USD per million tokens. Cache writes (5-minute TTL) cost 1.25× input, cache reads 0.1× input. */
interface Price {
  input: number;
  output: number;
}

// Ordered: the first prefix that matches the model id wins, so specific names come before families.
const PRICES: Array<[prefix: string, price: Price]> = [
  ["offline", { input: 0, output: 0 }],
  ["claude-opus-4-5", { input: 5, output: 25 }],
  ["claude-opus-4", { input: 15, output: 75 }],
  ["claude-3-opus", { input: 15, output: 75 }],
  ["claude-sonnet", { input: 3, output: 15 }],
  ["claude-3-7-sonnet", { input: 3, output: 15 }],
  ["claude-3-5-sonnet", { input: 3, output: 15 }],
  ["claude-haiku-4", { input: 1, output: 5 }],
  ["claude-3-5-haiku", { input: 0.8, output: 4 }],
  ["claude-3-haiku", { input: 0.25, output: 1.25 }],
];

/** Unknown models are priced like the default model (Sonnet), so a cost is never silently zero. */
const DEFAULT_PRICE: Price = { input: 3, output: 15 };

export interface UsageLike {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/** The price used for a model id (exposed for the supervisor's cost view). */
export function priceFor(model: string): Price {
  return PRICES.find(([prefix]) => model.startsWith(prefix))?.[1] ?? DEFAULT_PRICE;
}

/**
 * Estimated cost of one model call in USD micro-dollars (1 USD = 1,000,000), from the usage the API
 * reported. A price per million tokens is exactly micro-dollars per token, hence no scaling.
 */
export function estimateCostMicros(model: string, usage: UsageLike): number {
  const p = priceFor(model);
  const cost =
    usage.input_tokens * p.input +
    (usage.cache_creation_input_tokens ?? 0) * p.input * 1.25 +
    (usage.cache_read_input_tokens ?? 0) * p.input * 0.1 +
    usage.output_tokens * p.output;
  return Math.round(cost);
}
