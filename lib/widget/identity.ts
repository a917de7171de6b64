import { SignJWT, jwtVerify, errors as joseErrors } from "jose";
import { AppError } from "@/lib/errors";
import { lowerAscii } from "@/lib/identity/normalise";

/**
 * Customer identity for the widget: the shop's own backend signs who its signed-in customer is, as a
 * short-lived HS256 JWT with the tenant's widget secret (`sub` = the customer's email). We verify it on
 * every conversation start; a token with no expiry or a lifetime over an hour is refused, so an identity
 * that leaks cannot be replayed for long (DESIGN §7: "an identity hash that never expires").
 */

export const MAX_IDENTITY_TTL_SECONDS = 3600;
// Shops' clocks drift a little; tolerate it without letting a token live meaningfully longer.
const CLOCK_TOLERANCE_SECONDS = 30;
const ALGORITHM = "HS256";

function secretKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/**
 * Signs a customer's identity for the widget (what a shop's backend does; also used by the demo storefront
 * and tests). `shop` adds an `aud` claim so a token minted for one shop is refused by another even if the
 * secrets were ever shared.
 */
export async function signCustomerIdentity(
  secret: string,
  email: string,
  ttlSeconds = 600,
  opts: { shop?: string; now?: Date } = {},
): Promise<string> {
  if (!secret) throw new Error("signCustomerIdentity: empty secret");
  if (!(ttlSeconds > 0 && ttlSeconds <= MAX_IDENTITY_TTL_SECONDS))
    throw new Error(`signCustomerIdentity: ttlSeconds must be in (0, ${MAX_IDENTITY_TTL_SECONDS}]`);
  const iat = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  const jwt = new SignJWT({})
    .setProtectedHeader({ alg: ALGORITHM, typ: "JWT" })
    .setSubject(lowerAscii(email.trim()))
    .setIssuedAt(iat)
    .setExpirationTime(iat + ttlSeconds);
  if (opts.shop) jwt.setAudience(`shop:${opts.shop}`);
  return jwt.sign(secretKey(secret));
}

export interface VerifiedIdentity {
  email: string;
  expiresAt: Date;
}

const refused = (why: string) =>
  new AppError(
    "UNAUTHENTICATED",
    "We couldn't confirm your sign-in. Please refresh the page, or continue without signing in.",
    undefined,
    `identity refused: ${why}`,
  );

/** A tenant's widget secrets: the current one, and the one before a rotation while its overlap lasts. */
export interface WidgetSecrets {
  slug: string;
  widgetSecret: string;
  widgetSecretPrevious?: string | null;
  widgetSecretPreviousUntil?: Date | null;
}

/**
 * Verifies a shop-signed identity token for `tenant`. Throws AppError UNAUTHENTICATED (with the reason only
 * in the internal message) for a wrong signature or algorithm, a missing/expired `exp`, a lifetime over an
 * hour, an `iat` in the future, a missing `sub`, or an `aud` naming another shop. After a secret rotation, a
 * token signed with the previous secret verifies until `widgetSecretPreviousUntil` (the overlap), not after.
 */
export async function verifyCustomerIdentity(tenant: WidgetSecrets, token: unknown, now: Date = new Date()): Promise<VerifiedIdentity> {
  if (typeof token !== "string" || token.length === 0 || token.length > 4096) throw refused("not a token");
  const options = {
    algorithms: [ALGORITHM],
    requiredClaims: ["exp", "iat", "sub"],
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    currentDate: now,
  };
  const previous =
    tenant.widgetSecretPrevious && tenant.widgetSecretPreviousUntil && tenant.widgetSecretPreviousUntil > now
      ? tenant.widgetSecretPrevious
      : null;
  let payload: Awaited<ReturnType<typeof jwtVerify>>["payload"];
  try {
    try {
      ({ payload } = await jwtVerify(token, secretKey(tenant.widgetSecret), options));
    } catch (err) {
      // Only a signature that does not match the current secret is tried against the previous one.
      if (!previous || !(err instanceof joseErrors.JWSSignatureVerificationFailed)) throw err;
      ({ payload } = await jwtVerify(token, secretKey(previous), options));
    }
  } catch (err) {
    if (err instanceof joseErrors.JOSEError) throw refused(err.code);
    throw err;
  }
  const nowS = Math.floor(now.getTime() / 1000);
  const { exp, iat, sub, aud } = payload;
  if (typeof exp !== "number" || typeof iat !== "number") throw refused("exp/iat not numeric");
  if (exp - iat > MAX_IDENTITY_TTL_SECONDS) throw refused("lifetime over an hour");
  if (exp > nowS + MAX_IDENTITY_TTL_SECONDS + CLOCK_TOLERANCE_SECONDS) throw refused("exp too far ahead");
  if (iat > nowS + CLOCK_TOLERANCE_SECONDS) throw refused("iat in the future");
  if (aud !== undefined) {
    const audiences = Array.isArray(aud) ? aud : [aud];
    if (!audiences.includes(`shop:${tenant.slug}`)) throw refused("audience is another shop");
  }
  if (typeof sub !== "string" || !/^[^\s@]+@[^\s@]+$/.test(sub) || sub.length > 320) throw refused("sub is not an email");
  // Only A–Z is folded: an address that merely case-folds to a customer's (a Kelvin sign for a "k") names nobody.
  return { email: lowerAscii(sub.trim()), expiresAt: new Date(exp * 1000) };
}
