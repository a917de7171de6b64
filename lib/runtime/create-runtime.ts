import { hostname } from "node:os";
import { getPrisma } from "@/lib/db/client";
import { createModelClient } from "@/lib/model/client";
import type { ModelClient } from "@/lib/model/types";
import type { PrismaClient } from "@/lib/db/prisma-types";
import { DEFAULT_LEASE_MS, type RuntimeDeps } from "./deps";

/** Builds the runtime for this process: the shared database, the model (Claude or offline), a worker id. */
export async function createRuntime(opts: { db?: PrismaClient; model?: ModelClient; role?: string; leaseMs?: number } = {}): Promise<RuntimeDeps> {
  return {
    db: opts.db ?? (await getPrisma()),
    model: opts.model ?? createModelClient(),
    workerId: `${opts.role ?? "proc"}-${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    leaseMs: opts.leaseMs ?? DEFAULT_LEASE_MS,
  };
}
