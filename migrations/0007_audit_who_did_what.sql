-- The audit lists the outcome of every tool call, whatever its kind (HTTP, command,
-- MCP, Go function, built-in: canceled and abandoned ones too), and answers who did
-- what: a person's answer to a tool approval names the
-- tool, the arguments as proposed and as approved (a reviewer's edit), who answered
-- and how (approved, rejected with its message, edited, expired); a guardrail review's
-- decision and notes; guardrails that stopped a turn; and every guardrail policy match
-- (redactions and logs) on what a turn, a model or a tool carried.
DROP VIEW IF EXISTS audit;
CREATE VIEW audit AS
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path,
       CASE e.type WHEN 'PolicyDecided' THEN 'decision' WHEN 'ApprovalResolved' THEN 'approval'
                   WHEN 'ContextCompacted' THEN 'compaction' WHEN 'SkillLoaded' THEN 'skill' ELSE 'result' END AS kind,
       CASE e.type WHEN 'ContextCompacted' THEN NULL WHEN 'SkillLoaded' THEN 'load_skill' ELSE e.data ->> '$.tool' END AS tool,
       CASE e.type
         WHEN 'PolicyDecided' THEN e.data ->> '$.decision'
         WHEN 'ApprovalResolved' THEN iif(e.data ->> '$.confirmed', 'approved', 'rejected')
         WHEN 'ContextCompacted' THEN 'summarised ' || (e.data ->> '$.covers') || ' items'
         WHEN 'SkillLoaded' THEN e.data ->> '$.name'
         ELSE iif(e.data ->> '$.is_error', coalesce(e.data ->> '$.error_kind', 'error'), 'ok')
       END AS outcome,
       iif(e.type = 'PolicyDecided', (e.data ->> '$.level') || ' ' || (e.data ->> '$.rule'), NULL) AS rule,
       CASE e.type
         WHEN 'PolicyDecided' THEN e.data ->> '$.reason'
         WHEN 'ContextCompacted' THEN 'agent ' || (e.data ->> '$.agent') || ', items ' || (e.data ->> '$.from') || '–' || (e.data ->> '$.covers')
                                      || ', ' || (e.data ->> '$.tokens_before') || ' → ' || (e.data ->> '$.tokens_after') || ' tokens'
         WHEN 'SkillLoaded' THEN e.data ->> '$.path'
       END AS reason,
       iif(e.type = 'PolicyDecided', e.data -> '$.resources', NULL) AS resources,
       iif(e.type = 'ToolResulted' AND json_valid(e.data ->> '$.output'), (e.data ->> '$.output') ->> '$.exit_code', NULL) AS exit_code,
       iif(e.type = 'ToolResulted' AND json_valid(e.data ->> '$.output'), (e.data ->> '$.output') ->> '$.diff', NULL) AS diff,
       NULL AS answered_by, NULL AS proposed, NULL AS approved
FROM events e
WHERE e.type IN ('PolicyDecided', 'ContextCompacted', 'SkillLoaded')
   OR e.type = 'ToolResulted'
UNION ALL
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'approval' AS kind,
       (SELECT q.data ->> '$.tool' FROM events q WHERE q.session_id = e.session_id AND q.turn_id = e.turn_id AND q.path = e.path
           AND q.type = 'ApprovalRequested' AND q.seq < e.seq ORDER BY q.seq DESC LIMIT 1) AS tool,
       CASE WHEN e.data ->> '$.by' = 'turnlog' AND NOT e.data ->> '$.confirmed' THEN 'expired'
            WHEN e.data ->> '$.confirmed' AND e.data -> '$.arguments' IS NOT NULL AND e.data -> '$.arguments' IS NOT
                 (SELECT q.data -> '$.arguments' FROM events q WHERE q.session_id = e.session_id AND q.turn_id = e.turn_id AND q.path = e.path
                     AND q.type = 'ApprovalRequested' AND q.seq < e.seq ORDER BY q.seq DESC LIMIT 1) THEN 'edited'
            WHEN e.data ->> '$.confirmed' THEN 'approved' ELSE 'rejected' END AS outcome,
       (SELECT q.data ->> '$.rule' FROM events q WHERE q.session_id = e.session_id AND q.turn_id = e.turn_id AND q.path = e.path
           AND q.type = 'ApprovalRequested' AND q.seq < e.seq ORDER BY q.seq DESC LIMIT 1) AS rule,
       e.data ->> '$.rejection_message' AS reason, NULL AS resources, NULL AS exit_code, NULL AS diff,
       e.data ->> '$.by' AS answered_by,
       (SELECT q.data -> '$.arguments' FROM events q WHERE q.session_id = e.session_id AND q.turn_id = e.turn_id AND q.path = e.path
           AND q.type = 'ApprovalRequested' AND q.seq < e.seq ORDER BY q.seq DESC LIMIT 1) AS proposed,
       iif(e.data ->> '$.confirmed', coalesce(e.data -> '$.arguments',
           (SELECT q.data -> '$.arguments' FROM events q WHERE q.session_id = e.session_id AND q.turn_id = e.turn_id AND q.path = e.path
               AND q.type = 'ApprovalRequested' AND q.seq < e.seq ORDER BY q.seq DESC LIMIT 1)), NULL) AS approved
FROM events e WHERE e.type = 'ApprovalResolved'
UNION ALL
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'review' AS kind, NULL AS tool,
       iif(e.data ->> '$.decision' = 'approve', 'approved', 'rejected') AS outcome,
       (SELECT q.data ->> '$.rule' FROM events q WHERE q.session_id = e.session_id AND q.turn_id = e.turn_id AND q.path = e.path
           AND q.type = 'ReviewRequested' AND q.seq < e.seq ORDER BY q.seq DESC LIMIT 1) AS rule,
       e.data ->> '$.reviewer_notes' AS reason, NULL, NULL, NULL,
       e.data ->> '$.by' AS answered_by, NULL AS proposed, NULL AS approved
FROM events e WHERE e.type = 'ReviewResolved'
UNION ALL
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'guardrail' AS kind, NULL AS tool,
       iif(e.data ->> '$.kind' = 'policy', 'blocked', 'tripped') AS outcome, e.data ->> '$.name' AS rule,
       coalesce(e.data ->> '$.stage', '') || ': ' || coalesce(e.data ->> '$.reason', '') AS reason, NULL, NULL, NULL, NULL, NULL, NULL
FROM events e WHERE e.type = 'GuardrailTripped'
UNION ALL
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'policy' AS kind,
       iif(e.type = 'ToolResulted', e.data ->> '$.tool', NULL) AS tool,
       iif(m.value ->> '$.action' = 'redact', 'redacted', 'logged') AS outcome, m.value ->> '$.rule' AS rule,
       coalesce(m.value ->> '$.target', '') || ': ' || coalesce(m.value ->> '$.matches', 0) || ' match(es)' AS reason, NULL, NULL, NULL, NULL, NULL, NULL
FROM events e, json_each(e.data -> '$.policy') m
WHERE e.type IN ('TurnStarted', 'ModelCalled', 'ToolResulted') AND e.data -> '$.policy' IS NOT NULL;
