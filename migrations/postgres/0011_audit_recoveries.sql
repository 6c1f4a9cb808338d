-- A crash is a fact of the log (as SQLite's 0019): each TurnRecovered is an audit row
-- (kind recovery, outcome "attempt N").
DROP VIEW IF EXISTS audit_recoveries;
CREATE VIEW audit_recoveries AS
SELECT e.session_id, coalesce(e.turn_id, '') AS turn_id, e.seq, e.at, e.path, 'recovery' AS kind,
       'attempt ' || (e.data ->> 'attempt') AS outcome,
       'replayed ' || (e.data ->> 'replayed')
         || coalesce('; resent ' || (e.data -> 'resent')::text, '')
         || coalesce('; outcome unknown ' || (e.data -> 'outcome_unknown')::text, '') AS reason
FROM events e WHERE e.type = 'TurnRecovered';
