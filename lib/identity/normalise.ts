import { createHash } from "node:crypto";

/**
 * An email's letters A–Z in lower case, and nothing else changed: full Unicode lower-casing folds other characters
 * into ASCII (U+212A KELVIN SIGN becomes "k", U+0130 "İ" becomes "i̇"), so another address would name an account.
 */
export function lowerAscii(email: string): string {
  return email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

/** Emails compare case- and whitespace-insensitively ("  Dana@Example.com " is dana@example.com). */
export function normaliseEmail(raw: string): string {
  return lowerAscii(raw.trim().replace(/^<|>$/g, "").replace(/\.$/, ""));
}

/** What attempt rows and codes are keyed by: the email never stored in clear for addresses without an account. */
export function emailHash(raw: string): string {
  return createHash("sha256").update(normaliseEmail(raw)).digest("hex");
}

export function normalisePostcode(raw: string): string {
  return raw.toUpperCase().replace(/[^A-Z0-9]/g, "");
}

/** Postcodes match ignoring case, spaces and dashes; a US ZIP matches its ZIP+4 ("97204" ~ "97204-1234"). */
export function postcodesMatch(given: string, stored: string): boolean {
  const a = normalisePostcode(given);
  const b = normalisePostcode(stored);
  if (!a || !b) return false;
  if (a === b) return true;
  const [short, long] = a.length < b.length ? [a, b] : [b, a];
  return /^\d{5}$/.test(short) && /^\d{9}$/.test(long) && long.startsWith(short);
}
