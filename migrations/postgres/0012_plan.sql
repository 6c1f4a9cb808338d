-- The plan (as SQLite's 0020): each session's latest update_plan that succeeded.
CREATE INDEX IF NOT EXISTS events_plans ON events (session_id, seq)
  WHERE type = 'ToolResulted' AND data ->> 'tool' = 'update_plan';
DROP VIEW IF EXISTS plan;
CREATE VIEW plan AS
SELECT DISTINCT ON (e.session_id) e.session_id, coalesce(e.turn_id, '') AS turn_id, e.seq, e.at, e.path,
       turnlog_json(e.data ->> 'output') ->> 'goal' AS goal,
       (turnlog_json(e.data ->> 'output') -> 'items')::text AS items
FROM events e
WHERE e.type = 'ToolResulted' AND e.data ->> 'tool' = 'update_plan' AND NOT coalesce((e.data ->> 'is_error')::boolean, false)
ORDER BY e.session_id, e.seq DESC;
