-- Inputs that arrived while their session was busy and wait, in arrival order, to run
-- as their own turn (on_busy: enqueue or interrupt). A projection of InputQueued,
-- TurnStarted and QueuedInputDropped: rebuilt from the log like the others.
CREATE TABLE proj_queue (
    session_id TEXT    NOT NULL,
    turn_id    TEXT    NOT NULL,
    input      TEXT    NOT NULL,
    by_user    TEXT    NOT NULL,
    status     TEXT    NOT NULL CHECK (status IN ('queued', 'started', 'dropped')),
    queued_seq INTEGER NOT NULL,
    queued_at  TEXT    NOT NULL,
    ended_seq  INTEGER,
    PRIMARY KEY (session_id, turn_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX proj_queue_waiting ON proj_queue (session_id, queued_seq) WHERE status = 'queued';

CREATE VIEW queue AS
SELECT session_id, turn_id, input, by_user, queued_at FROM proj_queue WHERE status = 'queued';
