-- The plan: each session's latest update_plan that succeeded (its output is the plan,
-- small enough to stay in the event's row), found through events_plans whatever the
-- length of the log.
CREATE INDEX IF NOT EXISTS events_plans ON events (session_id, seq)
  WHERE type = 'ToolResulted' AND data ->> '$.tool' = 'update_plan';
DROP VIEW IF EXISTS plan;
CREATE VIEW plan AS
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path,
       (e.data ->> '$.output') ->> '$.goal' AS goal,
       (e.data ->> '$.output') -> '$.items' AS items
FROM events e
WHERE e.type = 'ToolResulted' AND e.data ->> '$.tool' = 'update_plan' AND NOT coalesce(e.data ->> '$.is_error', 0)
  AND e.seq = (SELECT max(l.seq) FROM events l WHERE l.session_id = e.session_id AND l.type = 'ToolResulted'
               AND l.data ->> '$.tool' = 'update_plan' AND NOT coalesce(l.data ->> '$.is_error', 0));
