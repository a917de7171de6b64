-- Live updates: the notification also says whether the statement's events can change the handoff queue ('q': a
-- handoff's events, a take-over or hand-back), so an open queue in a console is woken only by those, not by every
-- customer message of the shop. The same rule in TypeScript: touchesQueue (lib/console/feed-topics.ts).
CREATE OR REPLACE FUNCTION "support_notify_events"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('support_events', json_build_object('t', x."tenantId", 'c', x."conversationId", 'id', x.maxid::text, 'q', x.queue)::text)
  FROM (
    SELECT "tenantId", "conversationId", max(id) AS maxid, bool_or(type LIKE 'handoff.%' OR type = 'conversation.updated') AS queue
    FROM new_events GROUP BY 1, 2
  ) x;
  RETURN NULL;
END $$;
