-- A turn's usage in full (as SQLite's 0021): cached input and reasoning output tokens,
-- and the time its model calls took.
ALTER TABLE proj_turns ADD COLUMN IF NOT EXISTS cached_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE proj_turns ADD COLUMN IF NOT EXISTS reasoning_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE proj_turns ADD COLUMN IF NOT EXISTS model_ms bigint NOT NULL DEFAULT 0;
UPDATE proj_turns SET
  cached_tokens = coalesce((SELECT sum(coalesce((e.data -> 'usage' ->> 'cached_tokens')::bigint, 0)) FROM events e
                            WHERE e.session_id = proj_turns.session_id AND e.turn_id = proj_turns.turn_id AND e.type = 'ModelCalled'), 0),
  reasoning_tokens = coalesce((SELECT sum(coalesce((e.data -> 'usage' ->> 'reasoning_tokens')::bigint, 0)) FROM events e
                               WHERE e.session_id = proj_turns.session_id AND e.turn_id = proj_turns.turn_id AND e.type = 'ModelCalled'), 0);
DROP VIEW IF EXISTS turns;
CREATE VIEW turns AS
SELECT session_id, turn_id, status, agent, input, start_seq, end_seq, started_at::timestamptz AS started_at, ended_at::timestamptz AS ended_at,
       (extract(epoch FROM ended_at::timestamptz - started_at::timestamptz) * 1000)::bigint AS duration_ms,
       model_calls, tool_calls, input_tokens, output_tokens, error_code, error_message, agents,
       cached_tokens, reasoning_tokens, model_ms
FROM proj_turns;
