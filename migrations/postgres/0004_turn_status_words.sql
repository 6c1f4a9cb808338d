-- A turn's status outside the turn machine uses one vocabulary — running, queued,
-- suspended, completed, failed, canceled — in the API, the streams, the webhooks and
-- these views: a turn that committed is 'completed' (the event stays TurnCommitted).
ALTER TABLE proj_turns DROP CONSTRAINT proj_turns_status_check;
UPDATE proj_turns SET status = 'completed' WHERE status = 'committed';
ALTER TABLE proj_turns ADD CONSTRAINT proj_turns_status_check CHECK (status IN ('running', 'suspended', 'completed', 'failed', 'canceled'));

CREATE OR REPLACE VIEW branch_points AS
SELECT t.session_id, t.turn_id, t.end_seq AS seq, t.ended_at::timestamptz AS committed_at, t.end_agent AS agent,
       (SELECT coalesce(json_agg(s.id ORDER BY s.id), '[]'::json) FROM proj_sessions s
        WHERE s.parent_id = t.session_id AND s.parent_seq = t.end_seq) AS branches
FROM proj_turns t WHERE t.status = 'completed';
