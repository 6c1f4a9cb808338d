-- Seeks, not scans, for the steps whose cost must not grow with a session's history:
-- a session's newest turn (resume, new turns, expiry), and its pending interrupts
-- (listing them, closing those of a turn that ended).
CREATE INDEX proj_turns_start ON proj_turns (session_id, start_seq);
CREATE INDEX proj_interrupts_pending ON proj_interrupts (session_id, requested_seq) WHERE status = 'pending';
-- Open turns (recovery at start, the expiry sweep each second) in listing order. A
-- partial index serves a query only when the query names its condition exactly, so
-- there is one per status (the first release's IN-list index served neither).
DROP INDEX proj_turns_open;
CREATE INDEX proj_turns_running ON proj_turns (session_id, start_seq) WHERE status = 'running';
CREATE INDEX proj_turns_suspended ON proj_turns (session_id, start_seq) WHERE status = 'suspended';
