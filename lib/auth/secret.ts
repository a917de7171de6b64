import { createHash } from "node:crypto";
import { hostname } from "node:os";
import { env } from "@/lib/env";
import { log } from "@/lib/log";

const g = globalThis as typeof globalThis & { __supportAuthSecretWarned?: boolean };

/**
 * The secret that signs and encrypts session tokens. NEXTAUTH_SECRET in any real deployment; without it
 * (a fresh dev checkout) a secret derived from this machine and folder, so sign-in still works and every
 * process of this checkout agrees on it. A missing secret must not take the console down: it warns once instead.
 */
export function authSecret(): string {
  const configured = env().NEXTAUTH_SECRET ?? env().AUTH_SECRET;
  if (configured) return configured;
  if (!g.__supportAuthSecretWarned) {
    g.__supportAuthSecretWarned = true;
    log.warn(
      "NEXTAUTH_SECRET is not set: using a development secret derived from this machine. " +
        "Anyone who can read this checkout's path can forge a session — set NEXTAUTH_SECRET outside development.",
    );
  }
  return createHash("sha256").update(`support-agent:dev-session-secret:${hostname()}:${process.cwd()}`).digest("base64url");
}
