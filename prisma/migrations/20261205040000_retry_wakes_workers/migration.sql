-- Workers also wake when a run starts waiting for a retry: a sleeping worker sets its timer by the earliest retry it
-- knows of, and a retry that became due sooner (a model that was overloaded for a moment, a call sent back to its
-- gates at once) would otherwise wait for the worker's poll interval.
CREATE OR REPLACE FUNCTION "support_notify_runs"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW.phase = 'RUNNING' AND NEW."leaseOwner" IS NULL) OR NEW.phase = 'WAITING_FOR_RETRY' THEN
    PERFORM pg_notify('support_runs', NEW.id);
  END IF;
  RETURN NULL;
END $$;
