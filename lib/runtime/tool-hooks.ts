const SECRET_KEYS = /(password|secret|token|api[_-]?key|card_?number|cvc)/i;
// 13–19 digits, spaced or dashed — standing alone: not a run of digits inside an id (a UUID's last groups can be digits).
const CARD_NUMBER = /(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])/g;

/** Removes secrets from what the model reads: secret-looking keys dropped, card-like numbers masked. */
export function redact(value: unknown): unknown {
  if (typeof value === "string") return value.replace(CARD_NUMBER, (m) => `****${m.replace(/\D/g, "").slice(-4)}`);
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !SECRET_KEYS.test(k))
        .map(([k, v]) => [k, redact(v)]),
    );
  }
  return value;
}
