-- Turns passing through several agents, and seeks, not scans, for the steps whose cost must not grow with a session's history:
-- a session's newest turn (resume, new turns, expiry), and its pending interrupts
-- (listing them, closing those of a turn that ended).
CREATE INDEX proj_turns_start ON proj_turns (session_id, start_seq);
CREATE INDEX proj_interrupts_pending ON proj_interrupts (session_id, requested_seq) WHERE status = 'pending';
-- Open turns (recovery at start, the expiry sweep each second) in listing order. A
-- partial index serves a query only when the query names its condition exactly, so
-- there is one per status (the first release's IN-list index served neither).
DROP INDEX proj_turns_open;
CREATE INDEX proj_turns_running ON proj_turns (session_id, start_seq) WHERE status = 'running';
CREATE INDEX proj_turns_suspended ON proj_turns (session_id, start_seq) WHERE status = 'suspended';

-- The agents a turn passed through, in order: the one that started it, then the one
-- each handoff gave it to.
ALTER TABLE proj_turns ADD COLUMN agents TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(agents));
UPDATE proj_turns SET agents = json_array(agent);
DROP VIEW turns;
CREATE VIEW turns AS
SELECT session_id, turn_id, status, agent, input, start_seq, end_seq, started_at, ended_at,
       CAST(round((julianday(ended_at) - julianday(started_at)) * 86400000) AS INTEGER) AS duration_ms,
       model_calls, tool_calls, input_tokens, output_tokens, error_code, error_message, agents
FROM proj_turns;

-- History labels a tool's output with the agent whose call it answers (the item
-- itself, which the model sees, carries no agent).
DROP VIEW history;
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
       h.item ->> '$.arguments' AS arguments,
       h.item ->> '$.output'  AS output
FROM lineage l JOIN proj_history h ON h.session_id = l.ancestor AND (l.upto IS NULL OR h.seq <= l.upto)
ORDER BY l.session_id, l.depth DESC, h.seq, h.idx;

-- What the tools did and what was decided about them: policy decisions, people's
-- answers, and the results of the built-in workspace tools (files read and written with
-- their diffs, commands with their exit codes).
CREATE VIEW audit AS
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path,
       CASE e.type WHEN 'PolicyDecided' THEN 'decision' WHEN 'ApprovalResolved' THEN 'approval' ELSE 'result' END AS kind,
       e.data ->> '$.tool' AS tool,
       CASE e.type
         WHEN 'PolicyDecided' THEN e.data ->> '$.decision'
         WHEN 'ApprovalResolved' THEN iif(e.data ->> '$.confirmed', 'approved', 'rejected')
         ELSE iif(e.data ->> '$.is_error', coalesce(e.data ->> '$.error_kind', 'error'), 'ok')
       END AS outcome,
       iif(e.type = 'PolicyDecided', (e.data ->> '$.level') || ' ' || (e.data ->> '$.rule'), NULL) AS rule,
       iif(e.type = 'PolicyDecided', e.data ->> '$.reason', NULL) AS reason,
       iif(e.type = 'PolicyDecided', e.data -> '$.resources', NULL) AS resources,
       iif(e.type = 'ToolResulted' AND json_valid(e.data ->> '$.output'), (e.data ->> '$.output') ->> '$.exit_code', NULL) AS exit_code,
       iif(e.type = 'ToolResulted' AND json_valid(e.data ->> '$.output'), (e.data ->> '$.output') ->> '$.diff', NULL) AS diff
FROM events e
WHERE e.type IN ('PolicyDecided', 'ApprovalResolved')
   OR (e.type = 'ToolResulted' AND e.data ->> '$.tool' IN ('read_file', 'write_file', 'edit_file', 'glob', 'grep', 'bash'));
