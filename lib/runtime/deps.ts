import type { PrismaClient } from "@/lib/db/prisma-types";
import type { ModelClient } from "@/lib/model/types";
import type { Gate } from "@/lib/gates/types";
import type { DraftSink } from "@/lib/live/drafts";

/** What the runtime needs from outside. Everything else it rebuilds from the database on every call. */
export interface RuntimeDeps {
  db: PrismaClient;
  model: ModelClient;
  /** Identifies this worker in leases ("web-1234", "worker-5678"). */
  workerId: string;
  leaseMs: number;
  /**
   * Where the agent's reply goes while it is being written (lib/live/drafts): with it the model streams, and what is
   * safe to show (lib/runtime/reply-release) is shown as it is released.
   */
  drafts?: DraftSink;
  /** The gates every proposed call passes (defaults to lib/gates' set); replaceable for a tenant or a test. */
  gates?: readonly Gate[];
  /**
   * Optional accounting for benchmarks: time spent inside tool bodies (the harness's own time excludes it), and, when
   * `toolSpans` is given, each body's [start, end] (performance.now()), so statements inside it are not charged either.
   */
  metrics?: { toolMs: number; toolSpans?: Array<[number, number]> };
  /** The database's URL, for the process's LISTEN connection (workers wake on NOTIFY); without it they poll. */
  databaseUrl?: string;
}
