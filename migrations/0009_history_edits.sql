-- A reviewer's answer to a tool approval: who answered, and the arguments they gave
-- when they differ from the proposal (an edit). Existing rows are filled from their
-- events (a large one's from its blob). History shows an edited call as it ran: its
-- arguments are the reviewer's, with the model's proposal and the reviewer beside
-- them (the model's own context keeps the call as it proposed it, and the output it
-- received says what changed).
ALTER TABLE proj_interrupts ADD COLUMN answered_by TEXT;
ALTER TABLE proj_interrupts ADD COLUMN edited_arguments TEXT CHECK (edited_arguments IS NULL OR json_valid(edited_arguments));

UPDATE proj_interrupts SET
    answered_by = (SELECT json(coalesce(CAST(b.data AS TEXT), e.data)) ->> '$.by'
                   FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash
                   WHERE e.session_id = proj_interrupts.session_id AND e.seq = proj_interrupts.resolved_seq
                     AND e.type IN ('ApprovalResolved', 'ReviewResolved')),
    edited_arguments = (SELECT r.data -> '$.arguments'
                        FROM (SELECT json(coalesce(CAST(b.data AS TEXT), e.data)) AS data
                              FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash
                              WHERE e.session_id = proj_interrupts.session_id AND e.seq = proj_interrupts.resolved_seq
                                AND e.type = 'ApprovalResolved') r
                        WHERE r.data ->> '$.confirmed' AND r.data -> '$.arguments' IS NOT json(proj_interrupts.arguments))
WHERE resolved_seq IS NOT NULL;

DROP VIEW IF EXISTS history;
CREATE VIEW history AS
WITH RECURSIVE lineage (session_id, ancestor, upto, depth) AS (
    SELECT id, id, NULL, 0 FROM proj_sessions
    UNION ALL
    SELECT l.session_id, s.parent_id, s.parent_seq, l.depth + 1
    FROM lineage l JOIN proj_sessions s ON s.id = l.ancestor
    WHERE s.parent_id IS NOT NULL
)
SELECT l.session_id, h.session_id AS from_session, h.seq, h.idx, h.turn_id,
       h.item ->> '$.type'    AS type,
       h.item ->> '$.role'    AS role,
       coalesce(h.item ->> '$.agent',
                (SELECT c.item ->> '$.agent' FROM proj_history c
                 WHERE h.item ->> '$.type' = 'function_call_output' AND c.session_id = h.session_id AND c.seq = h.seq
                   AND c.item ->> '$.type' = 'function_call' AND c.item ->> '$.call_id' = h.item ->> '$.call_id')) AS agent,
       h.item ->> '$.content' AS content,
       h.item ->> '$.call_id' AS call_id,
       h.item ->> '$.name'    AS name,
       coalesce(i.edited_arguments, h.item ->> '$.arguments') AS arguments,
       h.item ->> '$.output'  AS output,
       i.answered_by AS edited_by,
       iif(i.edited_arguments IS NULL, NULL, h.item ->> '$.arguments') AS proposed_arguments
FROM lineage l JOIN proj_history h ON h.session_id = l.ancestor AND (l.upto IS NULL OR h.seq <= l.upto)
LEFT JOIN proj_interrupts i ON h.item ->> '$.type' = 'function_call' AND i.session_id = h.session_id AND i.turn_id = h.turn_id
     AND i.path = (h.item ->> '$.agent') || '/tool/' || (h.item ->> '$.call_id') || '/approval' AND i.edited_arguments IS NOT NULL
ORDER BY l.session_id, l.depth DESC, h.seq, h.idx;
