-- The audit names the files each call changed and each revert put back (as SQLite's
-- 0017): audit_files is a row a FilesChanged (kind files, at the call's path) or
-- WorkspaceReverted (kind revert, with who asked), with how many paths, the first 50
-- of them and how many cannot be reverted.
DROP VIEW IF EXISTS audit_files;
CREATE VIEW audit_files AS
SELECT e.session_id, coalesce(e.turn_id, '') AS turn_id, e.seq, e.at,
       CASE WHEN e.type = 'FilesChanged' THEN left(e.path, length(e.path) - length('/files')) ELSE e.path END AS path,
       CASE WHEN e.type = 'FilesChanged' THEN 'files' ELSE 'revert' END AS kind,
       d.value ->> 'tool' AS tool,
       json_array_length(d.value -> 'changes') || CASE WHEN e.type = 'FilesChanged' THEN ' paths changed' ELSE ' paths put back' END
         || CASE WHEN (d.value ->> 'forced')::boolean THEN ' (forced)' ELSE '' END AS outcome,
       CASE
         WHEN e.type = 'WorkspaceReverted' AND d.value ->> 'revert' IS NOT NULL THEN 'undoes the revert ' || (d.value ->> 'revert')
         WHEN e.type = 'WorkspaceReverted' THEN 'reverts the turns ' || (SELECT string_agg(t, ', ') FROM json_array_elements_text(d.value -> 'turns') t)
         ELSE (SELECT CASE WHEN count(*) > 0 THEN count(*) || ' cannot be reverted' END FROM json_array_elements(d.value -> 'changes') c
               WHERE c ->> 'not_revertible' IS NOT NULL)
       END AS reason,
       (SELECT coalesce(json_agg(p), '[]'::json) FROM (SELECT c ->> 'path' AS p FROM json_array_elements(d.value -> 'changes') c LIMIT 50) s)::text AS resources,
       d.value ->> 'by' AS answered_by
FROM events e
LEFT JOIN blobs b ON b.hash = e.blob_hash
CROSS JOIN LATERAL (SELECT CASE WHEN e.blob_hash IS NULL THEN e.data ELSE convert_from(b.data, 'UTF8')::json END AS value) d
WHERE e.type IN ('FilesChanged', 'WorkspaceReverted');
