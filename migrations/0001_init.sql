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
    parent_id       TEXT,                -- a branch's source session
    parent_seq      INTEGER,             -- ... and the seq it branched at
    parent_turn     TEXT
) STRICT;
CREATE INDEX proj_sessions_owner ON proj_sessions (owner, created_at DESC, id DESC);
CREATE INDEX proj_sessions_parent ON proj_sessions (parent_id, parent_seq) WHERE parent_id IS NOT NULL;

CREATE TABLE proj_turns (
    session_id    TEXT    NOT NULL,
    turn_id       TEXT    NOT NULL,
    start_seq     INTEGER NOT NULL,
    end_seq       INTEGER,
    status        TEXT    NOT NULL CHECK (status IN ('running', 'suspended', 'committed', 'failed', 'canceled')),
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
    end_agent     TEXT,                  -- the agent active after a committed turn
    PRIMARY KEY (session_id, turn_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX proj_turns_end ON proj_turns (session_id, end_seq);
CREATE INDEX proj_turns_open ON proj_turns (status) WHERE status IN ('running', 'suspended');

CREATE TABLE proj_history (
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,        -- seq of the TurnCommitted that added the item
    idx        INTEGER NOT NULL,        -- position within that commit
    turn_id    TEXT    NOT NULL,
    item       TEXT    NOT NULL CHECK (json_valid(item)),
    PRIMARY KEY (session_id, seq, idx)
) STRICT, WITHOUT ROWID;

CREATE TABLE proj_interrupts (
    session_id    TEXT    NOT NULL,
    interrupt_id  TEXT    NOT NULL,
    turn_id       TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    path          TEXT    NOT NULL,
    call_id       TEXT,
    tool          TEXT,
    arguments     TEXT CHECK (arguments IS NULL OR json_valid(arguments)),
    reason        TEXT,
    status        TEXT    NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'closed')),
    requested_seq INTEGER NOT NULL,
    requested_at  TEXT    NOT NULL,
    resolved_seq  INTEGER,
    resolved_at   TEXT,
    PRIMARY KEY (session_id, interrupt_id)
) STRICT, WITHOUT ROWID;

-- Views a person can query with sqlite3.
CREATE VIEW sessions AS
SELECT id, app, owner, metadata, created_at, active_agent, turn_count, last_commit_seq, parent_id, parent_seq, parent_turn
FROM proj_sessions;

-- A session's conversation: for a branch, its sources' items up to each branch point
-- (from_session names where an item was recorded), then its own.
CREATE VIEW history AS
WITH RECURSIVE lineage (session_id, ancestor, upto, depth) AS (
    SELECT id, id, NULL, 0 FROM proj_sessions
    UNION ALL
    SELECT l.session_id, s.parent_id, s.parent_seq, l.depth + 1
    FROM lineage l JOIN proj_sessions s ON s.id = l.ancestor
    WHERE s.parent_id IS NOT NULL
)
SELECT l.session_id, h.session_id AS from_session, h.seq, h.idx, h.turn_id,
       item ->> '$.type'    AS type,
       item ->> '$.role'    AS role,
       item ->> '$.agent'   AS agent,
       item ->> '$.content' AS content,
       item ->> '$.call_id' AS call_id,
       item ->> '$.name'    AS name,
       item ->> '$.arguments' AS arguments,
       item ->> '$.output'  AS output
FROM lineage l JOIN proj_history h ON h.session_id = l.ancestor AND (l.upto IS NULL OR h.seq <= l.upto)
ORDER BY l.session_id, l.depth DESC, h.seq, h.idx;

CREATE VIEW turns AS
SELECT session_id, turn_id, status, agent, input, start_seq, end_seq, started_at, ended_at,
       CAST(round((julianday(ended_at) - julianday(started_at)) * 86400000) AS INTEGER) AS duration_ms,
       model_calls, tool_calls, input_tokens, output_tokens, error_code, error_message
FROM proj_turns;

CREATE VIEW pending_interrupts AS
SELECT session_id, turn_id, interrupt_id, kind, path, tool, arguments, reason, requested_at
FROM proj_interrupts WHERE status = 'pending';

-- Every committed turn end (where a branch may start) and the branches made there.
CREATE VIEW branch_points AS
SELECT t.session_id, t.turn_id, t.end_seq AS seq, t.ended_at AS committed_at, t.end_agent AS agent,
       (SELECT json_group_array(s.id) FROM proj_sessions s
        WHERE s.parent_id = t.session_id AND s.parent_seq = t.end_seq) AS branches
FROM proj_turns t WHERE t.status = 'committed';
