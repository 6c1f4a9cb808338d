-- Long-term memory: what agents saved for a user of an app, searchable across that
-- user's sessions (never another user's). A row is keyed by the activity that wrote
-- it (session, turn, path), so a re-run tool or a replayed turn never writes twice.
CREATE TABLE memories (
    id         INTEGER PRIMARY KEY,
    app        TEXT NOT NULL,
    owner      TEXT NOT NULL,
    key        TEXT NOT NULL,            -- session/turn/path of the memory_save call
    label      TEXT NOT NULL DEFAULT '',
    text       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    vector     BLOB                      -- float32 little-endian, when an embeddings provider is set
) STRICT;
CREATE UNIQUE INDEX memories_key ON memories (app, owner, key);
CREATE INDEX memories_owner ON memories (app, owner, id);
CREATE VIRTUAL TABLE memories_fts USING fts5(text, label, content='memories', content_rowid='id', tokenize='porter unicode61');
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, label) VALUES (new.id, new.text, new.label);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, label) VALUES ('delete', old.id, old.text, old.label);
END;
