/**
 * Where the iframe keeps the visitor's conversation token: localStorage of the widget's origin, one entry
 * per shop. The entry remembers whose conversation it is (anonymous, or a hash of the signed-in email), so
 * a reload resumes it, while a different identity — another customer signing in, or signing out — starts
 * fresh. The server enforces the same rule; this only decides which token to present.
 */

interface StoredVisitor {
  who: string;
  token: string;
}

const key = (shop: string) => `support-widget:v1:${shop}`;

export function loadVisitor(shop: string): StoredVisitor | null {
  try {
    const raw = window.localStorage.getItem(key(shop));
    if (!raw) return null;
    const v = JSON.parse(raw) as Partial<StoredVisitor>;
    return typeof v.who === "string" && typeof v.token === "string" ? { who: v.who, token: v.token } : null;
  } catch {
    return null; // storage blocked (third-party iframe in strict browsers): the chat still works, without resume
  }
}

export function saveVisitor(shop: string, v: StoredVisitor): void {
  try {
    window.localStorage.setItem(key(shop), JSON.stringify(v));
  } catch {
    // see loadVisitor
  }
}

export function forgetVisitor(shop: string): void {
  try {
    window.localStorage.removeItem(key(shop));
  } catch {
    // see loadVisitor
  }
}

/**
 * Who an identity token claims to be, read WITHOUT verifying it (only the server can): used solely to pick
 * the stored conversation to offer. Hashed so the email itself is not kept in storage.
 */
export function visitorKey(identity: string | null): string {
  if (!identity) return "anonymous";
  let sub = "unknown";
  try {
    const payload = identity.split(".")[1] ?? "";
    const json = atob(
      payload
        .replace(/-/g, "+")
        .replace(/_/g, "/")
        .padEnd(Math.ceil(payload.length / 4) * 4, "="),
    );
    const claims = JSON.parse(json) as { sub?: unknown };
    if (typeof claims.sub === "string") sub = claims.sub.toLowerCase();
  } catch {
    // a malformed token: the server will refuse it anyway
  }
  // FNV-1a, 32-bit: enough to tell people apart on one device; not a security boundary.
  let h = 0x811c9dc5;
  for (let i = 0; i < sub.length; i++) {
    h ^= sub.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return `id:${(h >>> 0).toString(16)}`;
}
