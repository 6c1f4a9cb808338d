-- A turn's usage in full: cached input and reasoning output tokens as the provider
-- reports them, and the time its model calls took (ModelCalled.duration_ms; 0 for calls
-- recorded before it was kept). Existing turns are counted from their events here,
-- except calls whose event is kept as a blob (over 64 KiB), which count 0 until a
-- rebuild (turnlog rebuild) counts every event.
ALTER TABLE proj_turns ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE proj_turns ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE proj_turns ADD COLUMN model_ms INTEGER NOT NULL DEFAULT 0;
UPDATE proj_turns SET
  cached_tokens = coalesce((SELECT sum(coalesce(e.data ->> '$.usage.cached_tokens', 0)) FROM events e
                            WHERE e.session_id = proj_turns.session_id AND e.turn_id = proj_turns.turn_id AND e.type = 'ModelCalled'), 0),
  reasoning_tokens = coalesce((SELECT sum(coalesce(e.data ->> '$.usage.reasoning_tokens', 0)) FROM events e
                               WHERE e.session_id = proj_turns.session_id AND e.turn_id = proj_turns.turn_id AND e.type = 'ModelCalled'), 0);
DROP VIEW IF EXISTS turns;
CREATE VIEW turns AS
SELECT session_id, turn_id, status, agent, input, start_seq, end_seq, started_at, ended_at,
       CAST(round((julianday(ended_at) - julianday(started_at)) * 86400000) AS INTEGER) AS duration_ms,
       model_calls, tool_calls, input_tokens, output_tokens, error_code, error_message, agents,
       cached_tokens, reasoning_tokens, model_ms
FROM proj_turns;
