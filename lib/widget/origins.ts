import { env } from "@/lib/env";

/**
 * Which parent pages may host the widget. The iframe is told its parent's origin at load (a query
 * parameter); it talks only to that origin, and only if the tenant allows it. An empty allow-list means the
 * app's own origin only (the demo storefront and same-origin embeds).
 */

/** `scheme://host[:port]` of an http(s) URL or origin string, or null if it is not one. */
export function normalizeOrigin(value: unknown): string | null {
  if (typeof value !== "string" || value.length > 2048) return null;
  try {
    const url = new URL(value);
    if (url.protocol !== "https:" && url.protocol !== "http:") return null;
    // A host name (IDN as punycode, as the URL parser gives it) or an IP address — never a pattern: the URL parser
    // takes "*" (or "%2a") in a host, and an origin of "https://*" would be a frame-ancestors source matching every
    // https page.
    if (!HOST.test(url.hostname) && !/^\[[0-9a-f:.]+\]$/.test(url.hostname)) return null;
    return url.origin;
  } catch {
    return null;
  }
}

/** Labels of letters, digits, "-" and "_", dot-separated (a final dot allowed). */
const HOST = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/;

/** True when `parent` is the app's own origin (one of `appOrigins`) or on the tenant's allow-list. */
export function isAllowedParentOrigin(parent: string | null, allowedOrigins: readonly string[], appOrigins: readonly string[]): boolean {
  const origin = normalizeOrigin(parent);
  if (!origin) return false;
  return [...appOrigins, ...allowedOrigins].some((allowed) => normalizeOrigin(allowed) === origin);
}

/**
 * The origins this app is served from, for "same-origin" embeds: the origin of the current request (as
 * the browser addressed it) and, when configured, the public URL.
 */
export function appOriginsFromHeaders(h: Headers): string[] {
  const out: string[] = [];
  const host = h.get("x-forwarded-host")?.split(",")[0]?.trim() || h.get("host");
  const proto = h.get("x-forwarded-proto")?.split(",")[0]?.trim() || "http";
  if (host) {
    const o = normalizeOrigin(`${proto}://${host}`);
    if (o) out.push(o);
  }
  for (const configured of [env().APP_URL, env().NEXTAUTH_URL]) {
    const o = normalizeOrigin(configured);
    if (o && !out.includes(o)) out.push(o);
  }
  return out;
}
