-- The event log: append-only, one row per event, (session_id, seq) unique.
CREATE TABLE blobs (
    hash TEXT PRIMARY KEY,              -- "sha256:<hex>" of data
    size INTEGER NOT NULL CHECK (size >= 0),
    data BLOB NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE events (
    id         INTEGER PRIMARY KEY,     -- global append order, used by rebuild
    session_id TEXT    NOT NULL CHECK (session_id <> ''),
    seq        INTEGER NOT NULL CHECK (seq > 0),
    turn_id    TEXT    NOT NULL DEFAULT '',
    type       TEXT    NOT NULL CHECK (type <> ''),
    path       TEXT    NOT NULL DEFAULT '',
    v          INTEGER NOT NULL CHECK (v > 0),
    data       TEXT    NOT NULL CHECK (json_valid(data)),
    blob_hash  TEXT    REFERENCES blobs (hash),
    at         TEXT    NOT NULL,
    UNIQUE (session_id, seq)
) STRICT;

CREATE TRIGGER events_append_only_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: UPDATE refused'); END;
CREATE TRIGGER events_append_only_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only: DELETE refused'); END;
CREATE TRIGGER blobs_append_only_update BEFORE UPDATE ON blobs
BEGIN SELECT RAISE(ABORT, 'blobs are append-only: UPDATE refused'); END;
CREATE TRIGGER blobs_append_only_delete BEFORE DELETE ON blobs
BEGIN SELECT RAISE(ABORT, 'blobs are append-only: DELETE refused'); END;

-- Projections: read models folded from events, dropped and refolded by `turnlog rebuild`.
CREATE TABLE proj_sessions (
    id              TEXT PRIMARY KEY,
    app             TEXT    NOT NULL,
    owner           TEXT    NOT NULL,
    metadata        TEXT CHECK (metadata IS NULL OR json_valid(metadata)),
    created_at      TEXT    NOT NULL,
    created_seq     INTEGER NOT NULL,
    active_agent    TEXT    NOT NULL,
    turn_count      INTEGER NOT NULL DEFAULT 0,
    last_commit_seq INTEGER NOT NULL DEFAULT 0,
    parent_id       TEXT,
    parent_seq      INTEGER
) STRICT;

CREATE TABLE proj_turns (
    session_id    TEXT    NOT NULL,
    turn_id       TEXT    NOT NULL,
    start_seq     INTEGER NOT NULL,
    end_seq       INTEGER,
    status        TEXT    NOT NULL CHECK (status IN ('running', 'committed', 'failed')),
    input         TEXT    NOT NULL,
    agent         TEXT    NOT NULL,
    started_at    TEXT    NOT NULL,
    ended_at      TEXT,
    model_calls   INTEGER NOT NULL DEFAULT 0,
    tool_calls    INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    error_code    TEXT,
    error_message TEXT,
    PRIMARY KEY (session_id, turn_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX proj_turns_running ON proj_turns (status) WHERE status = 'running';

CREATE TABLE proj_history (
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,        -- seq of the TurnCommitted that added the item
    idx        INTEGER NOT NULL,        -- position within that commit
    turn_id    TEXT    NOT NULL,
    item       TEXT    NOT NULL CHECK (json_valid(item)),
    PRIMARY KEY (session_id, seq, idx)
) STRICT, WITHOUT ROWID;

-- Views a person can query with sqlite3.
CREATE VIEW sessions AS
SELECT id, app, owner, metadata, created_at, active_agent, turn_count, last_commit_seq, parent_id, parent_seq
FROM proj_sessions;

CREATE VIEW history AS
SELECT session_id, seq, idx, turn_id,
       item ->> '$.type'    AS type,
       item ->> '$.role'    AS role,
       item ->> '$.agent'   AS agent,
       item ->> '$.content' AS content,
       item ->> '$.call_id' AS call_id,
       item ->> '$.name'    AS name,
       item ->> '$.arguments' AS arguments,
       item ->> '$.output'  AS output
FROM proj_history;

CREATE VIEW turns AS
SELECT session_id, turn_id, status, agent, input, start_seq, end_seq, started_at, ended_at,
       CAST(round((julianday(ended_at) - julianday(started_at)) * 86400000) AS INTEGER) AS duration_ms,
       model_calls, tool_calls, input_tokens, output_tokens, error_code, error_message
FROM proj_turns;

CREATE VIEW branch_points AS
SELECT session_id, turn_id, end_seq AS seq, ended_at AS committed_at
FROM proj_turns WHERE status = 'committed';
