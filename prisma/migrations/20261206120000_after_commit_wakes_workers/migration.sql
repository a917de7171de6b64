-- A worker's after-commit work (sealing audit records into their shop's chain, fanning webhook events out to their
-- endpoints and sending them) wakes when there is some, instead of every worker looking for it every second: a
-- statement that writes audit records or webhook events NOTIFYs `support_after_commit` (delivered at commit; one
-- notification a transaction, as PostgreSQL folds identical ones). Retries due later are the worker's own timer.
CREATE FUNCTION "support_notify_after_commit"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('support_after_commit', '');
  RETURN NULL;
END $$;

CREATE TRIGGER "AuditEvent_notify" AFTER INSERT ON "AuditEvent"
  FOR EACH ROW EXECUTE FUNCTION "support_notify_after_commit"();
CREATE TRIGGER "WebhookEvent_notify" AFTER INSERT ON "WebhookEvent"
  FOR EACH ROW EXECUTE FUNCTION "support_notify_after_commit"();
