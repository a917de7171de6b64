// A runtime on a private test database with the offline model (scriptable) under the real SDK client.
import { createTestDatabase, type TestDatabase } from "./db";
import { createModelClient } from "@/lib/model/client";
import { createOfflineFetch, OfflineScript } from "@/lib/model/offline";
import type { RuntimeDeps } from "@/lib/runtime/deps";
import { decide, say, runDetail, listHandoffs } from "@/lib/operator/commands";
import { buildModelMessages, loadTranscriptRows, transcriptViolations } from "@/lib/runtime/transcript";

export interface Harness {
  tdb: TestDatabase;
  db: TestDatabase["prisma"];
  deps: RuntimeDeps;
  script: OfflineScript;
  acme: { id: string };
  staff: Record<"rita" | "raj" | "sol" | "ada" | "gus", { id: string; email: string; tenantId: string }>;
  say(text: string, opts?: { conversationId?: string; customer?: string }): ReturnType<typeof say>;
  decide(handoffId: string, as: string, decision: string, extra?: { input?: unknown; reason?: string; version?: number }): ReturnType<typeof decide>;
  pendingHandoffs(): ReturnType<typeof listHandoffs>;
  effects(): Promise<Array<{ toolName: string; idempotencyKey: string; outcome: unknown; runId: string }>>;
  /** The conversation's messages as the model would see them now, checked against the pairing contract. */
  transcriptProblems(conversationId: string): Promise<string[]>;
  runDetail(runId: string): ReturnType<typeof runDetail>;
  newDeps(workerId: string, model?: RuntimeDeps["model"]): RuntimeDeps;
  close(): Promise<void>;
}

export async function createHarness(opts: { leaseMs?: number; maxRetries?: number } = {}): Promise<Harness> {
  const tdb = await createTestDatabase();
  const db = tdb.prisma;
  const script = new OfflineScript();
  const model = createModelClient({ fetch: createOfflineFetch({ script }), maxRetries: opts.maxRetries ?? 0, timeoutMs: 2000 });
  const deps: RuntimeDeps = { db, model, workerId: "test-worker", leaseMs: opts.leaseMs ?? 30_000 };
  const acme = await db.tenant.findUniqueOrThrow({ where: { slug: "acme" } });
  const staffRows = await db.staffUser.findMany();
  const byName = (e: string) => staffRows.find((s) => s.email === e)!;
  const staff = {
    rita: byName("rita@acme.test"), raj: byName("raj@acme.test"), sol: byName("sol@acme.test"), ada: byName("ada@acme.test"), gus: byName("gus@globex.test"),
  };
  return {
    tdb, db, deps, script, acme, staff,
    say: (text, o = {}) => say(deps, { tenant: "acme", text, conversationId: o.conversationId, customerEmail: o.customer }),
    decide: (handoffId, as, decision, extra = {}) => decide(deps, { handoffId, staffEmail: as, decision, ...extra }),
    pendingHandoffs: () => listHandoffs(db, acme.id, { status: "PENDING" }),
    effects: () => db.effectLedger.findMany({ orderBy: { createdAt: "asc" } }),
    async transcriptProblems(conversationId) {
      return transcriptViolations(buildModelMessages(await loadTranscriptRows(db, conversationId)));
    },
    runDetail: (runId) => runDetail(db, runId),
    newDeps: (workerId, m = model) => ({ ...deps, workerId, model: m }),
    close: () => tdb.drop(),
  };
}
