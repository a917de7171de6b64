import { hostname } from "node:os";
import { getPrisma } from "@/lib/db/client";
import { storeOf } from "@/lib/db/kysely";
import { notifyDrafts } from "@/lib/live/drafts";
import { ensureDatabaseUrl } from "@/lib/db/server";
import { createModelClient } from "@/lib/model/client";
import type { ModelClient } from "@/lib/model/types";
import type { PrismaClient } from "@/lib/db/prisma-types";
import { env } from "@/lib/env";
import type { RuntimeDeps } from "./deps";

/** Builds the runtime for this process: the shared database, the model (Claude or offline), a worker id. */
export async function createRuntime(
  opts: { db?: PrismaClient; model?: ModelClient; role?: string; leaseMs?: number } = {},
): Promise<RuntimeDeps> {
  const db = opts.db ?? (await getPrisma());
  return {
    db,
    // The SDK retries nothing on its own: every attempt is the runtime's, counted against the run's one attempt
    // budget and recorded (a failed request waits for a retry with backoff, under the run's lease rules).
    model: opts.model ?? createModelClient({ maxRetries: 0 }),
    workerId: `${opts.role ?? "proc"}-${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    // Short, because an advance renews it while it works: a crashed worker's runs are picked up within seconds.
    leaseMs: opts.leaseMs ?? env().SUPPORT_LEASE_MS,
    // Replies stream to the customer as they are written (what is safe to show, sentence by sentence).
    drafts: env().SUPPORT_STREAM_REPLIES ? notifyDrafts(storeOf(db)) : undefined,
    databaseUrl: opts.db ? undefined : await ensureDatabaseUrl(),
  };
}
