-- A worker at rest sleeps until something is due instead of looking every few seconds, so what it sleeps until must
-- include the next pending approval's expiry (read with the runs' next retry and lease end, lib/store/runs.ts
-- nextDueAt): this index makes that read, and the expiry pass's, one index entry however many handoffs there are.
CREATE INDEX "Handoff_pending_approval_expiry" ON "Handoff" ("expiresAt") WHERE kind = 'APPROVAL' AND status = 'PENDING';

-- And a run that parks wakes the workers, so a sleeping worker sets its timer by the new approval's expiry.
CREATE OR REPLACE FUNCTION "support_notify_runs"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.phase = 'RUNNING' AND NEW."leaseOwner" IS NULL) OR NEW.phase IN ('WAITING_FOR_RETRY', 'WAITING_FOR_APPROVAL') THEN
    PERFORM pg_notify('support_runs', NEW.id);
  END IF;
  RETURN NULL;
END $$;
