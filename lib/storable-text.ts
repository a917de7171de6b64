import { AppError } from "@/lib/errors";

/**
 * Text PostgreSQL can store: no NUL (text and jsonb refuse it) and no lone UTF-16 surrogate (jsonb refuses the `\ud800`
 * escape JSON.stringify writes for one). Input from people is refused with a clear 400; output of the model — which we
 * cannot send back — is made storable by replacing what cannot be kept with U+FFFD.
 */

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** True when the string is valid Unicode (no unpaired UTF-16 surrogate). */
export function isWellFormed(s: string): boolean {
  return !LONE.test(s);
}

/** The string with every NUL and lone surrogate replaced by U+FFFD. */
export function storableText(s: string): string {
  return s.replace(UNSTORABLE, "\ufffd");
}

/** A JSON-like value with every string, keys included, made storable (see storableText). */
export function storableDeep<T>(value: T): T {
  if (typeof value === "string") return storableText(value) as T;
  if (Array.isArray(value)) return value.map(storableDeep) as T;
  if (value && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storableText(k), storableDeep(v)])) as T;
  return value;
}

/** Refuses (400 INVALID_INPUT) a value with any string, key or value at any depth, that cannot be stored. */
export function assertStorable(value: unknown, where: string): void {
  const bad = (s: string) => s.includes("\u0000") || !isWellFormed(s);
  const visit = (v: unknown): boolean => {
    if (typeof v === "string") return bad(v);
    if (Array.isArray(v)) return v.some(visit);
    if (v && typeof v === "object") return Object.entries(v).some(([k, x]) => bad(k) || visit(x));
    return false;
  };
  if (visit(value))
    throw new AppError("INVALID_INPUT", `The ${where} contains a character that is not text (NUL or an unpaired surrogate).`);
}
