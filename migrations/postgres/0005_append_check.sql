-- The checks of an append, run by the database as the first statement of the append's
-- one round trip (the events, their read-model changes, outbox rows and notify follow
-- in the same pipeline, one implicit transaction): when one fails it raises, the
-- transaction is rolled back, and nothing of the append is written.
--   TL001  the lease the append was made under (p_token, 0 for none) is no longer the
--          session's: another node runs it now;
--   TL002  the session is not at seq p_after (its last seq is in the message's detail);
--   TL003  the session does not exist and the append does not open it.
CREATE FUNCTION turnlog_append_check(p_session text, p_after bigint, p_token bigint, p_opens boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    current_token bigint;
    last_seq bigint;
BEGIN
    IF p_token <> 0 THEN
        -- Locked for the transaction: a takeover waits for it, and an append after a
        -- takeover sees the new token.
        SELECT token INTO current_token FROM session_leases WHERE session_id = p_session FOR SHARE;
        IF NOT FOUND OR current_token <> p_token THEN
            RAISE EXCEPTION 'this node lost the lease of session %', p_session USING ERRCODE = 'TL001';
        END IF;
    END IF;
    SELECT coalesce(max(seq), 0) INTO last_seq FROM events WHERE session_id = p_session;
    IF last_seq <> p_after THEN
        RAISE EXCEPTION 'session % is at seq %, not %', p_session, last_seq, p_after USING ERRCODE = 'TL002', DETAIL = last_seq::text;
    END IF;
    IF last_seq = 0 AND NOT p_opens THEN
        RAISE EXCEPTION 'session % not found', p_session USING ERRCODE = 'TL003';
    END IF;
END $$;
