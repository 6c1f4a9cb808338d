-- The undo log's file contents (the events FilesChanged and WorkspaceReverted name them
-- by hash): each content and each chunk of one (package undo cuts them) is held once,
-- whoever wrote it. content_refs says which session holds which — a content and every
-- chunk of it —, written in the append of the event that names it. Like events and
-- blobs they only leave through an erasure, and a content or chunk only once no
-- session outside the erasure refers to it.
CREATE TABLE content_chunks (
    hash TEXT PRIMARY KEY,              -- "sha256:<hex>" of data
    data BLOB NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE contents (
    hash   TEXT PRIMARY KEY,            -- "sha256:<hex>" of the whole content
    size   INTEGER NOT NULL CHECK (size >= 0),
    chunks TEXT NOT NULL                -- its chunks' hashes in order, separated by spaces
) STRICT, WITHOUT ROWID;

CREATE TABLE content_refs (
    session_id TEXT NOT NULL,
    hash       TEXT NOT NULL,           -- a content's or a chunk's
    PRIMARY KEY (session_id, hash)
) STRICT, WITHOUT ROWID;
CREATE INDEX content_refs_hash ON content_refs (hash);

CREATE TRIGGER content_chunks_append_only_update BEFORE UPDATE ON content_chunks
BEGIN SELECT RAISE(ABORT, 'content_chunks are append-only: UPDATE refused'); END;
CREATE TRIGGER content_chunks_append_only_delete BEFORE DELETE ON content_chunks
WHEN NOT EXISTS (SELECT 1 FROM erasing)
  OR EXISTS (SELECT 1 FROM content_refs WHERE hash = old.hash AND session_id NOT IN (SELECT session_id FROM erasing))
BEGIN SELECT RAISE(ABORT, 'content_chunks are append-only: DELETE refused'); END;

CREATE TRIGGER contents_append_only_update BEFORE UPDATE ON contents
BEGIN SELECT RAISE(ABORT, 'contents are append-only: UPDATE refused'); END;
CREATE TRIGGER contents_append_only_delete BEFORE DELETE ON contents
WHEN NOT EXISTS (SELECT 1 FROM erasing)
  OR EXISTS (SELECT 1 FROM content_refs WHERE hash = old.hash AND session_id NOT IN (SELECT session_id FROM erasing))
BEGIN SELECT RAISE(ABORT, 'contents are append-only: DELETE refused'); END;

CREATE TRIGGER content_refs_append_only_update BEFORE UPDATE ON content_refs
BEGIN SELECT RAISE(ABORT, 'content_refs are append-only: UPDATE refused'); END;
CREATE TRIGGER content_refs_append_only_delete BEFORE DELETE ON content_refs
WHEN NOT EXISTS (SELECT 1 FROM erasing WHERE session_id = old.session_id)
BEGIN SELECT RAISE(ABORT, 'content_refs are append-only: DELETE refused'); END;

-- One row a path a tool call or a revert changed: FilesChanged and WorkspaceReverted,
-- their changes unrolled (from the blob when the event's data is stored there).
DROP VIEW IF EXISTS file_changes;
CREATE VIEW file_changes AS
SELECT e.session_id, e.turn_id, e.seq, e.at, e.type AS kind,
       iif(e.blob_hash IS NULL, e.data, CAST(b.data AS TEXT)) ->> '$.call_id' AS call_id,
       iif(e.blob_hash IS NULL, e.data, CAST(b.data AS TEXT)) ->> '$.tool' AS tool,
       iif(e.blob_hash IS NULL, e.data, CAST(b.data AS TEXT)) ->> '$.revert_id' AS revert_id,
       c.value ->> '$.path' AS path,
       c.value ->> '$.before.kind' AS before_kind, c.value ->> '$.before.hash' AS before_hash,
       c.value ->> '$.after.kind' AS after_kind, c.value ->> '$.after.hash' AS after_hash,
       c.value ->> '$.not_revertible' AS not_revertible
FROM events e
LEFT JOIN blobs b ON b.hash = e.blob_hash
CROSS JOIN json_each(iif(e.blob_hash IS NULL, e.data, CAST(b.data AS TEXT)), '$.changes') c
WHERE e.type IN ('FilesChanged', 'WorkspaceReverted');
