import "server-only";
import { getPrisma } from "@/lib/db/client";
import { env } from "@/lib/env";
import { getRuntime } from "@/lib/runtime/shared-runtime";
import type { ApiEndpoint } from "./endpoint";
import { createApiHandler } from "./handler";

/**
 * A route handler of app/api/v1 for an endpoint, on this process's database and runtime:
 *
 *   export const GET = serveEndpoint(listHandoffsEndpoint);
 */
export function serveEndpoint(endpoint: ApiEndpoint) {
  return createApiHandler(endpoint, {
    getDb: getPrisma,
    getRuntime,
    rateLimit: () => ({ points: env().SUPPORT_API_RATE_PER_MINUTE, windowSeconds: 60 }),
  });
}
