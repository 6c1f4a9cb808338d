-- Erasure: the one guarded path by which a session's events and blobs may be removed.
-- Ordinary UPDATE and DELETE of events and blobs are still refused. A DELETE passes
-- only inside a transaction that first names the session in `erasing` (and clears it
-- again before it commits), and a blob goes only when no session outside the erasure
-- still references it.
CREATE TABLE erasing (
    session_id TEXT PRIMARY KEY
) STRICT, WITHOUT ROWID;

DROP TRIGGER IF EXISTS events_append_only_delete;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM erasing WHERE session_id = old.session_id)
BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END;

DROP TRIGGER IF EXISTS blobs_append_only_delete;
CREATE TRIGGER blobs_append_only_delete BEFORE DELETE ON blobs
WHEN NOT EXISTS (SELECT 1 FROM erasing)
  OR EXISTS (SELECT 1 FROM events WHERE blob_hash = old.hash AND session_id NOT IN (SELECT session_id FROM erasing))
BEGIN SELECT RAISE(ABORT, 'blobs are append-only: DELETE refused'); END;

CREATE INDEX IF NOT EXISTS events_blob ON events (blob_hash) WHERE blob_hash IS NOT NULL;
CREATE INDEX IF NOT EXISTS webhook_outbox_session ON webhook_outbox (session_id);

-- What each erasure removed, when and at whose request: counts and identifiers,
-- never content.
CREATE TABLE erasures (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('session', 'user', 'retention')),
    subject    TEXT NOT NULL,            -- the session or user asked for
    by_user    TEXT NOT NULL,            -- who asked ("turnlog" for retention)
    at         TEXT NOT NULL,
    sessions   TEXT NOT NULL CHECK (json_valid(sessions)), -- the ids of the sessions erased
    counts     TEXT NOT NULL CHECK (json_valid(counts))    -- rows removed, by kind
) STRICT, WITHOUT ROWID;
CREATE INDEX erasures_at ON erasures (at, id);

-- FTS5 keeps a deleted memory's words in its index until segments merge; with
-- secure-delete it removes them at once.
INSERT INTO memories_fts (memories_fts, rank) VALUES ('secure-delete', 1);
