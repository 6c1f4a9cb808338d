-- The undo log's file contents, as on SQLite (migrations/0016_file_contents.sql): each
-- content and chunk held once; content_refs says which session holds which, written in
-- the append of the event that names it; only an erasure removes them, a content or
-- chunk once no session outside the erasure refers to it.
CREATE TABLE content_chunks (
    hash text COLLATE "C" PRIMARY KEY,  -- "sha256:<hex>" of data
    data bytea NOT NULL
);

CREATE TABLE contents (
    hash   text COLLATE "C" PRIMARY KEY, -- "sha256:<hex>" of the whole content
    size   bigint NOT NULL CHECK (size >= 0),
    chunks text NOT NULL                 -- its chunks' hashes in order, separated by spaces
);

CREATE TABLE content_refs (
    session_id text COLLATE "C" NOT NULL,
    hash       text COLLATE "C" NOT NULL, -- a content's or a chunk's
    PRIMARY KEY (session_id, hash)
);
CREATE INDEX content_refs_hash ON content_refs (hash);

CREATE FUNCTION turnlog_contents_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM erasing)
       OR EXISTS (SELECT 1 FROM content_refs WHERE hash = OLD.hash AND session_id NOT IN (SELECT session_id FROM erasing)) THEN
        RAISE EXCEPTION '% are append-only: DELETE refused', TG_TABLE_NAME USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END $$;

CREATE FUNCTION turnlog_content_refs_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM erasing WHERE session_id = OLD.session_id) THEN
        RAISE EXCEPTION 'content_refs are append-only: DELETE refused' USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END $$;

CREATE TRIGGER content_chunks_append_only_update BEFORE UPDATE ON content_chunks FOR EACH ROW EXECUTE FUNCTION turnlog_refuse();
CREATE TRIGGER content_chunks_append_only_delete BEFORE DELETE ON content_chunks FOR EACH ROW EXECUTE FUNCTION turnlog_contents_delete();
CREATE TRIGGER content_chunks_append_only_truncate BEFORE TRUNCATE ON content_chunks FOR EACH STATEMENT EXECUTE FUNCTION turnlog_refuse();
CREATE TRIGGER contents_append_only_update BEFORE UPDATE ON contents FOR EACH ROW EXECUTE FUNCTION turnlog_refuse();
CREATE TRIGGER contents_append_only_delete BEFORE DELETE ON contents FOR EACH ROW EXECUTE FUNCTION turnlog_contents_delete();
CREATE TRIGGER contents_append_only_truncate BEFORE TRUNCATE ON contents FOR EACH STATEMENT EXECUTE FUNCTION turnlog_refuse();
CREATE TRIGGER content_refs_append_only_update BEFORE UPDATE ON content_refs FOR EACH ROW EXECUTE FUNCTION turnlog_refuse();
CREATE TRIGGER content_refs_append_only_delete BEFORE DELETE ON content_refs FOR EACH ROW EXECUTE FUNCTION turnlog_content_refs_delete();
CREATE TRIGGER content_refs_append_only_truncate BEFORE TRUNCATE ON content_refs FOR EACH STATEMENT EXECUTE FUNCTION turnlog_refuse();

-- One row a path a tool call or a revert changed, as on SQLite.
DROP VIEW IF EXISTS file_changes;
CREATE VIEW file_changes AS
SELECT e.session_id, e.turn_id, e.seq, e.at::timestamptz AS at, e.type AS kind,
       d.value ->> 'call_id' AS call_id, d.value ->> 'tool' AS tool, d.value ->> 'revert_id' AS revert_id,
       c.value ->> 'path' AS path,
       c.value -> 'before' ->> 'kind' AS before_kind, c.value -> 'before' ->> 'hash' AS before_hash,
       c.value -> 'after' ->> 'kind' AS after_kind, c.value -> 'after' ->> 'hash' AS after_hash,
       c.value ->> 'not_revertible' AS not_revertible
FROM events e
LEFT JOIN blobs b ON b.hash = e.blob_hash
CROSS JOIN LATERAL (SELECT CASE WHEN e.blob_hash IS NULL THEN e.data ELSE convert_from(b.data, 'UTF8')::json END AS value) d
CROSS JOIN LATERAL json_array_elements(d.value -> 'changes') AS c(value)
WHERE e.type IN ('FilesChanged', 'WorkspaceReverted');
