/** Only same-site paths: a callbackUrl must never send a freshly signed-in person to another origin. */
export function safeCallbackUrl(raw: string | undefined | null): string {
  if (!raw?.startsWith("/") || raw.startsWith("//") || raw.startsWith("/\\")) return "/console";
  return raw;
}
