-- Grants: a person's yes, for the rest of a session, to the commands a pattern names.
-- A turn reads a session's grants (and those of the sessions it was branched from, up
-- to the branch point) through events_grants, whatever the length of its log; the
-- audit lists each grant given and revoked (kind grant, rule the grant's id).
CREATE INDEX IF NOT EXISTS events_grants ON events (session_id, seq) WHERE type IN ('GrantGiven', 'GrantRevoked');
DROP VIEW IF EXISTS audit_grants;
CREATE VIEW audit_grants AS
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'grant' AS kind,
       e.data ->> '$.tool' AS tool,
       iif(e.type = 'GrantGiven', 'given', 'revoked') AS outcome,
       e.data ->> '$.grant_id' AS rule,
       iif(e.type = 'GrantGiven', coalesce(e.data ->> '$.command', (e.data ->> '$.prefix') || '…'), e.data ->> '$.reason') AS reason,
       e.data ->> '$.by' AS answered_by
FROM events e WHERE e.type IN ('GrantGiven', 'GrantRevoked');
