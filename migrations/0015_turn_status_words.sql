-- A turn's status outside the turn machine uses one vocabulary — running, queued,
-- suspended, completed, failed, canceled — in the API, the streams, the webhooks and
-- these views: a turn that committed is 'completed' (the event stays TurnCommitted).
-- SQLite cannot change a CHECK, so proj_turns is rebuilt with its rows mapped, and
-- the views on it made again.
DROP VIEW turns;
DROP VIEW branch_points;
CREATE TABLE proj_turns_new (
    session_id    TEXT    NOT NULL,
    turn_id       TEXT    NOT NULL,
    start_seq     INTEGER NOT NULL,
    end_seq       INTEGER,
    status        TEXT    NOT NULL CHECK (status IN ('running', 'suspended', 'completed', 'failed', 'canceled')),
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
    end_agent     TEXT,                  -- the agent active after a completed turn
    agents        TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(agents)),
    PRIMARY KEY (session_id, turn_id)
) STRICT, WITHOUT ROWID;
INSERT INTO proj_turns_new (session_id, turn_id, start_seq, end_seq, status, input, agent, started_at, ended_at,
                            model_calls, tool_calls, input_tokens, output_tokens, error_code, error_message, end_agent, agents)
SELECT session_id, turn_id, start_seq, end_seq, iif(status = 'committed', 'completed', status), input, agent, started_at, ended_at,
       model_calls, tool_calls, input_tokens, output_tokens, error_code, error_message, end_agent, agents
FROM proj_turns;
DROP TABLE proj_turns;
ALTER TABLE proj_turns_new RENAME TO proj_turns;
CREATE INDEX proj_turns_end ON proj_turns (session_id, end_seq);
CREATE INDEX proj_turns_start ON proj_turns (session_id, start_seq);
CREATE INDEX proj_turns_running ON proj_turns (session_id, start_seq) WHERE status = 'running';
CREATE INDEX proj_turns_suspended ON proj_turns (session_id, start_seq) WHERE status = 'suspended';

CREATE VIEW branch_points AS
SELECT t.session_id, t.turn_id, t.end_seq AS seq, t.ended_at AS committed_at, t.end_agent AS agent,
       (SELECT json_group_array(s.id) FROM proj_sessions s
        WHERE s.parent_id = t.session_id AND s.parent_seq = t.end_seq) AS branches
FROM proj_turns t WHERE t.status = 'completed';

CREATE VIEW turns AS
SELECT session_id, turn_id, status, agent, input, start_seq, end_seq, started_at, ended_at,
       CAST(round((julianday(ended_at) - julianday(started_at)) * 86400000) AS INTEGER) AS duration_ms,
       model_calls, tool_calls, input_tokens, output_tokens, error_code, error_message, agents
FROM proj_turns;
