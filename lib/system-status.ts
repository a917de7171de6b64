import "server-only";
import { getPrisma } from "@/lib/db/client";

/** What runs right now, for the landing page and health checks. */
export async function systemStatus() {
  const db = await getPrisma();
  const [tenants, pending] = await Promise.all([db.tenant.count(), db.handoff.count({ where: { status: "PENDING" } })]);
  return {
    database: process.env.DATABASE_URL ? "PostgreSQL (DATABASE_URL)" : "embedded PostgreSQL (.data/pg)",
    model: process.env.ANTHROPIC_API_KEY ? `Claude (${process.env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5"})` : "offline model",
    tenants,
    pendingHandoffs: pending,
  };
}
