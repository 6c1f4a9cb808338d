-- Grants (as SQLite's 0018): a turn reads a session's grants through events_grants,
-- whatever the length of its log; the audit lists each grant given and revoked.
CREATE INDEX IF NOT EXISTS events_grants ON events (session_id, seq) WHERE type IN ('GrantGiven', 'GrantRevoked');
DROP VIEW IF EXISTS audit_grants;
CREATE VIEW audit_grants AS
SELECT e.session_id, coalesce(e.turn_id, '') AS turn_id, e.seq, e.at, e.path, 'grant' AS kind,
       e.data ->> 'tool' AS tool,
       CASE WHEN e.type = 'GrantGiven' THEN 'given' ELSE 'revoked' END AS outcome,
       e.data ->> 'grant_id' AS rule,
       CASE WHEN e.type = 'GrantGiven' THEN coalesce(e.data ->> 'command', (e.data ->> 'prefix') || '…') ELSE e.data ->> 'reason' END AS reason,
       e.data ->> 'by' AS answered_by
FROM events e WHERE e.type IN ('GrantGiven', 'GrantRevoked');
