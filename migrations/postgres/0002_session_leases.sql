-- Which node runs a session's turn now. A node takes a session's lease before it
-- drives a turn of it, renews it while the turn runs, and gives it up after. Each
-- taking raises the token; every append made under a lease checks, inside its own
-- transaction, that the lease still has that token, so a node that lost its lease
-- (it paused past the expiry, and another took over) cannot append any more.
CREATE TABLE session_leases (
    session_id text COLLATE "C" PRIMARY KEY,
    node       text        NOT NULL,
    token      bigint      NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX session_leases_expiry ON session_leases (expires_at);
