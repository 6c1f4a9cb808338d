-- A crash is a fact of the log: each TurnRecovered — the run of the turn it is, the
-- calls it sent again, those whose outcome is unknown, how many recorded activities it
-- reused — is an audit row (kind recovery, outcome "attempt N").
DROP VIEW IF EXISTS audit_recoveries;
CREATE VIEW audit_recoveries AS
SELECT e.session_id, e.turn_id, e.seq, e.at, e.path, 'recovery' AS kind,
       'attempt ' || (e.data ->> '$.attempt') AS outcome,
       'replayed ' || (e.data ->> '$.replayed')
         || coalesce('; resent ' || (e.data -> '$.resent'), '')
         || coalesce('; outcome unknown ' || (e.data -> '$.outcome_unknown'), '') AS reason
FROM events e WHERE e.type = 'TurnRecovered';
