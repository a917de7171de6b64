-- AlterTable
ALTER TABLE "Conversation" ADD COLUMN     "queuedCount" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "ToolCall" ADD COLUMN     "gateFacts" JSONB;

-- CreateTable
CREATE TABLE "WebhookEvent" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "WebhookEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "WebhookEvent_tenantId_createdAt_idx" ON "WebhookEvent"("tenantId", "createdAt");

-- Live updates: every statement that writes events NOTIFYs `support_events` (delivered at commit) with the
-- tenant, the conversation and the newest id it wrote, so each process's one listener wakes the streams that
-- follow them instead of every open stream polling the table.
CREATE FUNCTION "support_notify_events"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('support_events', json_build_object('t', x."tenantId", 'c', x."conversationId", 'id', x.maxid::text)::text)
  FROM (SELECT "tenantId", "conversationId", max(id) AS maxid FROM new_events GROUP BY 1, 2) x;
  RETURN NULL;
END $$;

CREATE TRIGGER "Event_notify" AFTER INSERT ON "Event" REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION "support_notify_events"();

-- At most one pending escalation per conversation: a second one racing the first inserts nothing (ON CONFLICT).
CREATE UNIQUE INDEX "Handoff_one_pending_escalation" ON "Handoff" ("conversationId") WHERE kind = 'ESCALATION' AND status = 'PENDING';

-- Workers wake at once when a run becomes due with nobody holding it (a decision resumed it, a worker let go of
-- it, a run was started without a lease), instead of polling.
CREATE FUNCTION "support_notify_runs"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.phase = 'RUNNING' AND NEW."leaseOwner" IS NULL THEN
    PERFORM pg_notify('support_runs', NEW.id);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "Run_notify_due" AFTER INSERT OR UPDATE OF phase, "leaseOwner" ON "Run"
  FOR EACH ROW EXECUTE FUNCTION "support_notify_runs"();
