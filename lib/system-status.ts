import "server-only";
import { getPrisma } from "@/lib/db/client";
import { env } from "@/lib/env";

/** What runs right now, for the landing page and health checks. */
export async function systemStatus() {
  const db = await getPrisma();
  const [tenants, pending] = await Promise.all([db.tenant.count(), db.handoff.count({ where: { status: "PENDING" } })]);
  return {
    database: env().DATABASE_URL ? "PostgreSQL (DATABASE_URL)" : "embedded PostgreSQL (.data/pg)",
    model: env().ANTHROPIC_API_KEY ? `Claude (${env().ANTHROPIC_MODEL})` : "offline model",
    tenants,
    pendingHandoffs: pending,
  };
}
