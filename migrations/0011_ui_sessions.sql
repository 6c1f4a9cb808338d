-- The web inspector's sign-ins: one row per browser session, found by the hash of
-- its cookie (the cookie itself is never stored). Signing out revokes the row, so
-- every node refuses the cookie at once. Not a projection: a rebuild leaves it alone.
CREATE TABLE ui_sessions (
    id_hash    TEXT    PRIMARY KEY,          -- sha256 of the cookie's value, hex
    user_name  TEXT    NOT NULL,
    admin      INTEGER NOT NULL CHECK (admin IN (0, 1)),
    csrf       TEXT    NOT NULL,             -- the token every form of this session carries
    created_at TEXT    NOT NULL,
    expires_at TEXT    NOT NULL,
    revoked_at TEXT
) STRICT, WITHOUT ROWID;
CREATE INDEX ui_sessions_expiry ON ui_sessions (expires_at);
