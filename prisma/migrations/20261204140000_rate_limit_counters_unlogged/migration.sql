-- Rate-limit counters are not a promise the product keeps across a crash: they count requests in a window of a
-- minute or an hour. As an UNLOGGED table their writes go to no WAL, so a count commits without waiting for the
-- disk — the shop's counter row is locked by every message the shop receives, and each waited there for the commit
-- of the one before it. After a crash of the database (not a clean stop) PostgreSQL empties the table: every window
-- starts again from zero, which can let through at most one window's worth of requests more.
ALTER TABLE "ApiRateLimit" SET UNLOGGED;
