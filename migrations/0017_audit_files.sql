-- The audit names the files each call changed and each revert put back: audit_files
-- is a row a FilesChanged (kind files, at the call's path) or WorkspaceReverted (kind
-- revert, with who asked), with how many paths, the first 50 of them and how many
-- cannot be reverted. The audit the API and the inspector show is audit's rows and
-- these, in log order; file_changes has a row a path.
DROP VIEW IF EXISTS audit_files;
CREATE VIEW audit_files AS
SELECT x.session_id, coalesce(x.turn_id, '') AS turn_id, x.seq, x.at,
       iif(x.type = 'FilesChanged', substr(x.path, 1, length(x.path) - length('/files')), x.path) AS path,
       iif(x.type = 'FilesChanged', 'files', 'revert') AS kind,
       x.d ->> '$.tool' AS tool,
       json_array_length(x.d, '$.changes') || iif(x.type = 'FilesChanged', ' paths changed', ' paths put back')
         || iif(x.d ->> '$.forced', ' (forced)', '') AS outcome,
       CASE
         WHEN x.type = 'WorkspaceReverted' AND x.d ->> '$.revert' IS NOT NULL THEN 'undoes the revert ' || (x.d ->> '$.revert')
         WHEN x.type = 'WorkspaceReverted' THEN 'reverts the turns ' || (SELECT group_concat(t.value, ', ') FROM json_each(x.d, '$.turns') t)
         ELSE (SELECT iif(count(*) > 0, count(*) || ' cannot be reverted', NULL) FROM json_each(x.d, '$.changes') c
               WHERE c.value ->> '$.not_revertible' IS NOT NULL)
       END AS reason,
       (SELECT json_group_array(p) FROM (SELECT c.value ->> '$.path' AS p FROM json_each(x.d, '$.changes') c LIMIT 50)) AS resources,
       x.d ->> '$.by' AS answered_by
FROM (SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, e.type, iif(e.blob_hash IS NULL, e.data, CAST(b.data AS TEXT)) AS d
      FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash
      WHERE e.type IN ('FilesChanged', 'WorkspaceReverted')) x;
