-- A session's newest turn (resume, new turns, expiry) is found by an index seek, not a
-- scan of the session's turns: the cost of those steps must not grow with history.
CREATE INDEX proj_turns_start ON proj_turns (session_id, start_seq);
