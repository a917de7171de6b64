-- The metrics page (lib/console/metrics.ts) on a shop's 100,000 runs: every query reads indexes that lead with the
-- shop, index-only, and hash-joins them on the run's id (measured by `npm run bench:metrics`).
-- Authored by `npm run db:migration -- metrics_indexes`, then edited by hand where Prisma's schema cannot say it:
-- the two columns are GENERATED ALWAYS AS … STORED (Prisma wrote them as defaults, which is how its schema engine
-- reads a generation expression back: the next diff is empty), and the partial indexes at the end (Prisma leaves
-- partial indexes alone).

-- DropIndex
DROP INDEX "Run_tenantId_startedAt_idx";

-- AlterTable: an escalation's reason, out of the payload, in the same write as the payload.
ALTER TABLE "Handoff" ADD COLUMN "trigger" TEXT GENERATED ALWAYS AS (payload ->> 'trigger'::text) STORED;

-- AlterTable: the amount a call runs with (effectiveInput, else input), when it is an integer — in the same write as
-- the input or a reviewer's edit. Anything else (a decimal, a word) is NULL rather than an error: the row is always
-- written.
ALTER TABLE "ToolCall" ADD COLUMN "amountCents" BIGINT GENERATED ALWAYS AS (
CASE
    WHEN ((COALESCE("effectiveInput", input) ->> 'amount_cents'::text) ~ '^\s*[-+]?[0-9]{1,18}\s*$'::text) THEN ((COALESCE("effectiveInput", input) ->> 'amount_cents'::text))::bigint
    ELSE NULL::bigint
END) STORED;

-- CreateIndex
CREATE INDEX "Handoff_tenantId_kind_status_runId_decidedById_decidedAt_cr_idx" ON "Handoff"("tenantId", "kind", "status", "runId", "decidedById", "decidedAt", "createdAt");

-- CreateIndex
CREATE INDEX "ModelCall_tenantId_runId_costMicros_idx" ON "ModelCall"("tenantId", "runId", "costMicros");

-- CreateIndex: replaces ("tenantId", "startedAt"), same leading columns.
CREATE INDEX "Run_tenantId_startedAt_id_conversationId_phase_idx" ON "Run"("tenantId", "startedAt", "id", "conversationId", "phase");

-- The runs whose reply was held back because a person had taken the conversation over (run-outcome.ts): few, and
-- Run.outcome cannot be indexed whole (it can be long). Its predicate is the metrics query's condition, word for word.
CREATE INDEX "Run_suppressed_by_tenant" ON "Run" ("tenantId", "startedAt") INCLUDE (id)
  WHERE outcome LIKE 'end_turn (suppressed%';

-- A shop's escalations with their reason.
CREATE INDEX "Handoff_escalations_by_tenant" ON "Handoff" ("tenantId", "runId", "trigger") WHERE kind = 'ESCALATION';

-- A shop's successful escalate_to_human calls.
CREATE INDEX "ToolCall_escalations_by_tenant" ON "ToolCall" ("tenantId", "runId")
  WHERE name = 'escalate_to_human' AND status = 'SUCCEEDED';

-- A shop's refunds that ran or that a person denied, with what the figures need.
CREATE INDEX "ToolCall_refunds_by_tenant" ON "ToolCall" ("tenantId", "runId") INCLUDE (status, "decidedById", "amountCents")
  WHERE name = 'refund_order' AND status IN ('SUCCEEDED', 'DENIED');
