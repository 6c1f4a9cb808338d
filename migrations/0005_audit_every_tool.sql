-- The audit lists the outcome of every tool call, whatever its kind (HTTP, command,
-- MCP, Go function, built-in): what an HTTP tool did to another system, or that a
-- call was canceled or abandoned, is as much a part of the record as a command.
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
       iif(e.type = 'ToolResulted' AND json_valid(e.data ->> '$.output'), (e.data ->> '$.output') ->> '$.diff', NULL) AS diff
FROM events e
WHERE e.type IN ('PolicyDecided', 'ApprovalResolved', 'ContextCompacted', 'SkillLoaded')
   OR e.type = 'ToolResulted';
