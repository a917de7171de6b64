import type { VerificationLevel as DbVerificationLevel } from "@/lib/generated/prisma/enums";

/**
 * How a conversation's customer proved who they are, weakest first. A name or an order number alone proves
 * nothing (names are public, order numbers sequential), so neither is a level.
 */
export const VERIFICATION_LEVELS = ["order_email", "order_email_postcode", "email_code", "shop_signed"] as const;
export type VerificationLevel = (typeof VERIFICATION_LEVELS)[number];

// The database enum and this list must name the same levels.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const _sameLevels: Same<VerificationLevel, DbVerificationLevel> = true;
void _sameLevels;

/** Changing where an order goes needs more than the email and an order number (both may be on a packing slip). */
export const ADDRESS_CHANGE_LEVEL: VerificationLevel = "order_email_postcode";

export function verificationLevelOf(value: unknown): VerificationLevel | null {
  return VERIFICATION_LEVELS.find((l) => l === value) ?? null;
}

export function meetsLevel(have: VerificationLevel | null | undefined, need: VerificationLevel): boolean {
  return !!have && VERIFICATION_LEVELS.indexOf(have) >= VERIFICATION_LEVELS.indexOf(need);
}

export function strongerLevel(a: VerificationLevel, b: VerificationLevel | null | undefined): VerificationLevel {
  return b && VERIFICATION_LEVELS.indexOf(b) > VERIFICATION_LEVELS.indexOf(a) ? b : a;
}

/** The structured part of a refusal for too weak a verification: the model can act on it (ask, send a code). */
export interface VerificationShortfall {
  message: string;
  required_verification: VerificationLevel;
  verification_level: VerificationLevel | null;
}

/**
 * Null when `have` is enough for `need`; otherwise what the model must do to get there. Shared by the tools that
 * enforce a level and by the gate that checks it before they run.
 */
export function verificationShortfall(have: VerificationLevel | null | undefined, need: VerificationLevel): VerificationShortfall | null {
  if (meetsLevel(have, need)) return null;
  const how =
    need === "order_email_postcode"
      ? "Ask the customer for the postcode of the order's current delivery address and call verify_customer again with email, order_number and postcode, or send a one-time code with send_verification_code and verify with it."
      : "Send a one-time code with send_verification_code and call verify_customer with the email and the code the customer reads from their mail.";
  return {
    message: `This needs a stronger identity check than the customer has passed so far (${have ?? "none"}). ${how}`,
    required_verification: need,
    verification_level: have ?? null,
  };
}
