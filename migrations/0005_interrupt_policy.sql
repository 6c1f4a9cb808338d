-- A pending interrupt carries what the turn response says of it: the rule that asks,
-- and for the tool policy the call's level, resources and alternative, as canonical
-- JSON {rule, level, resources, alternative}. Existing rows are filled from their
-- events.
ALTER TABLE proj_interrupts ADD COLUMN policy TEXT CHECK (policy IS NULL OR json_valid(policy));

UPDATE proj_interrupts SET policy = (
    SELECT json_object('rule', coalesce(e.data ->> '$.rule', ''), 'level', coalesce(e.data ->> '$.level', ''),
                       'resources', json(coalesce(e.data -> '$.resources', '[]')), 'alternative', coalesce(e.data ->> '$.alternative', ''))
    FROM events e
    WHERE e.session_id = proj_interrupts.session_id AND e.path = proj_interrupts.path
      AND e.type IN ('ApprovalRequested', 'ReviewRequested')
    ORDER BY e.seq DESC LIMIT 1);

DROP VIEW IF EXISTS pending_interrupts;
CREATE VIEW pending_interrupts AS
SELECT session_id, turn_id, interrupt_id, kind, path, tool, arguments, reason,
       policy ->> '$.rule' AS rule, nullif(policy ->> '$.level', '') AS level, requested_at
FROM proj_interrupts WHERE status = 'pending';
