import type { PrismaClient } from "@/lib/db/prisma-types";
import type { ModelClient } from "@/lib/model/types";
import type { Gate } from "@/lib/gates/types";

/** What the runtime needs from outside. Everything else it rebuilds from the database on every call. */
export interface RuntimeDeps {
  db: PrismaClient;
  model: ModelClient;
  /** Identifies this worker in leases ("web-1234", "worker-5678"). */
  workerId: string;
  leaseMs: number;
  /** Streams text deltas of the model's reply, e.g. to the widget. */
  onTextDelta?: (conversationId: string, text: string) => void;
  /** The gates every proposed call passes (defaults to lib/gates' set); replaceable for a tenant or a test. */
  gates?: readonly Gate[];
  /** Optional accounting for benchmarks: time spent inside tool bodies (the harness's own time excludes it). */
  metrics?: { toolMs: number };
}

export const DEFAULT_LEASE_MS = Number(process.env.SUPPORT_LEASE_MS ?? 60_000);
