-- Claiming an idempotency key in one statement: (p_owner, p_key) is taken for the
-- request unless a live record holds it; an expired record is replaced. It returns
-- the key's record and whether this call claimed it. The record a live claim holds
-- is read after the insert gave way to it (a statement of its own: a claim made by
-- a transaction that committed meanwhile is seen).
CREATE FUNCTION turnlog_claim_key(p_owner text, p_key text, p_route text, p_body_hash text, p_session text, p_turn text, p_created text, p_expires text, p_now text)
RETURNS TABLE (claimed boolean, owner text, key text, route text, body_hash text, session_id text, turn_id text, start_seq bigint, created_at text, expires_at text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    INSERT INTO idempotency_keys AS k (owner, key, route, body_hash, session_id, turn_id, start_seq, created_at, expires_at)
    VALUES (p_owner, p_key, p_route, p_body_hash, p_session, p_turn, 0, p_created, p_expires)
    ON CONFLICT ON CONSTRAINT idempotency_keys_pkey DO UPDATE SET route = EXCLUDED.route, body_hash = EXCLUDED.body_hash,
        session_id = EXCLUDED.session_id, turn_id = EXCLUDED.turn_id, start_seq = 0, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
    WHERE k.expires_at <= p_now
    RETURNING true, k.owner, k.key, k.route, k.body_hash, k.session_id, k.turn_id, k.start_seq, k.created_at, k.expires_at;
    IF FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT false, k.owner, k.key, k.route, k.body_hash, k.session_id, k.turn_id, k.start_seq, k.created_at, k.expires_at
    FROM idempotency_keys k WHERE k.owner = p_owner AND k.key = p_key;
END $$;
