import { env } from "@/lib/env";
import { appOriginsFromHeaders, normalizeOrigin } from "@/lib/widget/origins";

/**
 * The app's public URL for links that leave the app (an invitation mail, the embed snippet): APP_URL, else
 * NEXTAUTH_URL, else the origin the request was addressed to, else localhost with the configured port.
 */
export function publicAppUrl(headers: Pick<Headers, "get"> | null): string {
  for (const configured of [env().APP_URL, env().NEXTAUTH_URL]) {
    const origin = normalizeOrigin(configured);
    if (origin) return origin;
  }
  const fromRequest = headers ? appOriginsFromHeaders(headers as Headers)[0] : undefined;
  return fromRequest ?? `http://localhost:${env().PORT}`;
}
