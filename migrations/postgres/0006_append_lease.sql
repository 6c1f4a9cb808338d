-- An append's checks and the lease of the run that makes it, in the one function the
-- append's round trip runs first (0005's turnlog_append_check stays for nodes of
-- the release before it, during a rolling upgrade). The lease:
--   p_token > 0   it must still have that token, else TL001 (another node runs the
--                 session now); it is renewed to p_ttl_us from now (0: not renewed;
--                 never shortened: the engine renews once a third of it has gone);
--   p_token = 0, p_node <> ''
--                 the append takes it for p_node until p_ttl_us from now, when it
--                 is free, expired or p_node's already; else TL004 (another node
--                 holds it);
--   p_token = 0, p_node = ''
--                 an append outside any lease (one node);
--   p_release     it is given up as the append commits (the run's last append).
-- A lease given up keeps its row, expired for ever ('-infinity'), so that the next
-- taking raises its token again: a token is never given twice for a session.
-- Then the log: TL002 the session is not at seq p_after (its last seq is the
-- detail); TL003 it does not exist and the append does not open it.
-- With p_unsynced the append's commit does not wait for the WAL to reach the disk.
-- (The other nodes hear of the commit from the node's notifier, after it: a NOTIFY
-- here would hold the notify lock through the commit's flush, and every notifying
-- commit would wait behind it.)
-- It returns the lease's token after the append (0: none, or given up). A raise
-- rolls the whole append back, lease included.
CREATE FUNCTION turnlog_append_leased(p_session text, p_after bigint, p_token bigint, p_node text, p_ttl_us bigint, p_release boolean,
    p_opens boolean, p_unsynced boolean) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    held bigint := p_token;
    last_seq bigint;
BEGIN
    IF p_unsynced THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF p_token > 0 THEN
        -- Locked to the commit: a takeover waits for it.
        PERFORM 1 FROM session_leases
        WHERE session_id = p_session AND token = p_token AND expires_at > '-infinity' FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'this node lost the lease of session %', p_session USING ERRCODE = 'TL001';
        END IF;
        IF p_ttl_us > 0 AND NOT p_release THEN
            UPDATE session_leases SET expires_at = clock_timestamp() + p_ttl_us * interval '1 microsecond'
            WHERE session_id = p_session AND token = p_token AND expires_at < clock_timestamp() + p_ttl_us * interval '1 microsecond';
        END IF;
    ELSIF p_node <> '' THEN
        INSERT INTO session_leases AS l (session_id, node, token, expires_at)
        VALUES (p_session, p_node, 1, clock_timestamp() + p_ttl_us * interval '1 microsecond')
        ON CONFLICT (session_id) DO UPDATE SET node = p_node, token = l.token + 1, expires_at = EXCLUDED.expires_at
        WHERE l.expires_at < clock_timestamp() OR l.node = p_node
        RETURNING token INTO held;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'session % is busy on another node', p_session USING ERRCODE = 'TL004';
        END IF;
    END IF;
    SELECT coalesce(max(seq), 0) INTO last_seq FROM events WHERE session_id = p_session;
    IF last_seq <> p_after THEN
        RAISE EXCEPTION 'session % is at seq %, not %', p_session, last_seq, p_after USING ERRCODE = 'TL002', DETAIL = last_seq::text;
    END IF;
    IF last_seq = 0 AND NOT p_opens THEN
        RAISE EXCEPTION 'session % not found', p_session USING ERRCODE = 'TL003';
    END IF;
    IF p_release AND held > 0 THEN
        UPDATE session_leases SET expires_at = '-infinity' WHERE session_id = p_session AND token = held;
        held := 0;
    END IF;
    RETURN held;
END $$;

-- Nothing looks leases up by their expiry: without the index a renewal rewrites the
-- row in place (a heap-only update), not every index of it.
DROP INDEX session_leases_expiry;
