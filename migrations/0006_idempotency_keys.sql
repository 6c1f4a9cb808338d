-- Idempotency-Key records of write requests, per user: which route and body (a hash
-- of its canonical JSON) a key was first used with, and what it made — the session,
-- and the turn for turn routes — so a repeated request answers from the log instead
-- of acting again. Not events: they expire (expires_at) and are deleted then.
CREATE TABLE idempotency_keys (
    owner       TEXT NOT NULL,
    key         TEXT NOT NULL,
    route       TEXT NOT NULL,
    body_hash   TEXT NOT NULL,
    session_id  TEXT NOT NULL DEFAULT '',
    turn_id     TEXT NOT NULL DEFAULT '',
    start_seq   INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    PRIMARY KEY (owner, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
CREATE INDEX idempotency_keys_session ON idempotency_keys (session_id);
