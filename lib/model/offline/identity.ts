/**
 * The offline model's reading of how a customer proves who they are: one-time codes, postcodes, and asking for a
 * code instead of an order number. Pure text functions, and the sentences the model asks with. (Names are
 * never read for identity: a name proves nothing.)
 */

const CODE_WORDS = /\b(?:code|pin|otp)\b/i;

/**
 * A 6-digit code the customer typed: "my code is 123456", "code: 123 456"; a bare "123456" only when a code is
 * awaited (otherwise six digits may be anything).
 */
export function findCode(text: string, awaited: boolean): string | undefined {
  const labelled = text.match(/\b(?:code|pin|otp)\b[^0-9]{0,20}(\d{3}[ -]?\d{3})\b/i);
  if (labelled) return labelled[1]!.replace(/[ -]/g, "");
  if (!awaited) return undefined;
  const bare = text.match(/(?:^|[^\w-])(\d{3}[ -]?\d{3})(?![\w-])/);
  return bare && (CODE_WORDS.test(text) || text.replace(bare[1]!, "").replace(/[\s.,!]/g, "").length <= 20)
    ? bare[1]!.replace(/[ -]/g, "")
    : undefined;
}

/** "send me a code", "can you email me a verification code", "I don't have my order number". */
export function asksForCode(text: string): boolean {
  return (
    /\b(?:send|e-?mail|mail|text)\b[^.?!]{0,30}\b(?:code|pin)\b/i.test(text) ||
    /\b(?:one[- ]time|verification|login|security|new)\s+code\b/i.test(text) ||
    /\b(?:don'?t|do not|no longer) (?:have|know|remember)\b[^.?!]{0,20}\border (?:number|#|no)/i.test(text) ||
    /\b(?:no|without an?|lost (?:my|the)|can'?t find (?:my|the)) order (?:number|#|no)\b/i.test(text)
  );
}

const POSTCODE = "([A-Z0-9][A-Z0-9 -]{1,8}[A-Z0-9])";

/**
 * The postcode of the current delivery address: "postcode 97204", "my zip is 97204", "postal code: SW1A 1AA";
 * a bare "97204" only when one is awaited.
 */
export function findPostcode(text: string, awaited: boolean): string | undefined {
  const labelled = text.match(new RegExp(`\\b(?:post\\s?code|postal\\s?code|zip(?:\\s?code)?)\\b\\s*(?:is|:|=|-)?\\s*${POSTCODE}\\b`, "i"));
  if (labelled && /\d/.test(labelled[1]!)) return labelled[1]!.trim().toUpperCase();
  if (!awaited) return undefined;
  const bare = text.trim().replace(/[.!]+$/, "");
  return new RegExp(`^${POSTCODE}$`, "i").test(bare) && /\d/.test(bare) ? bare.toUpperCase() : undefined;
}

export type IdentityQuestion =
  | "identity"
  | "email_for_identity"
  | "order_for_identity"
  | "email_for_code"
  | "code"
  | "not_matched"
  | "code_not_matched"
  | "try_later"
  | "codes_try_later"
  | "postcode"
  | "postcode_not_matched";

export function identityQuestionSentence(q: IdentityQuestion, order?: string): string {
  switch (q) {
    case "identity":
      return "I can help with that. First I need to verify your account: what's the email address on it, and an order number (it looks like A-1234)? If you don't have an order number, I can email you a one-time code instead.";
    case "email_for_identity":
      return `To verify your account, could you tell me the email address you used for ${order ? `order ${order}` : "your order"}?`;
    case "order_for_identity":
      return "Thanks. Could you also give me an order number from your account (it looks like A-1234), so I can confirm it's you? If you don't have one, I can email you a one-time code instead.";
    case "email_for_code":
      return "Sure. What's the email address on your account? I'll send the code there.";
    case "code":
      // Not "I've sent": the runtime's stop check reads that as a claimed refund.
      return "If an account exists for that email address, a 6-digit code is on its way to it. Please type the code here (it's valid for 10 minutes).";
    case "not_matched":
      return "Those details don't match our records. Could you double-check the email address and the order number? If you prefer, I can email you a one-time code instead.";
    case "code_not_matched":
      return "That code doesn't match our records or has expired. Could you check it? I can also send you a new one.";
    case "try_later":
      return "Those details don't match our records, and there have been too many attempts. Please try again later (in about 15 minutes).";
    case "codes_try_later":
      return "I can't send another code right now because too many were requested. Please try again later (in about 15 minutes), or give me the email address and an order number on your account.";
    case "postcode":
      return `For your security, changing a delivery address needs one more check: what's the postcode of the address ${order ? `order ${order}` : "the order"} is currently going to? (Or I can email you a one-time code.)`;
    case "postcode_not_matched":
      return "Those details don't match our records, so I can't change the address yet. Could you check the postcode of the current delivery address? I can also email you a one-time code instead.";
  }
}
