-- Webhook deliveries: an outbox row is written in the same transaction as the event
-- that causes it (a turn committed, failed, suspended for a person, or canceled), one
-- per webhook that asked for that kind. Not a projection: a rebuild leaves it alone,
-- so nothing is delivered twice because of it. The payload is not kept here; it is
-- built from the event at each attempt, so it is the same bytes every time.
CREATE TABLE webhook_outbox (
    delivery_id  TEXT    PRIMARY KEY,
    app          TEXT    NOT NULL,
    webhook      TEXT    NOT NULL,
    event        TEXT    NOT NULL CHECK (event IN ('turn.committed', 'turn.failed', 'turn.suspended', 'turn.canceled')),
    session_id   TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    turn_id      TEXT    NOT NULL,
    status       TEXT    NOT NULL CHECK (status IN ('pending', 'sending', 'delivered', 'dead')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_at_ms   INTEGER NOT NULL, -- pending: when it is due; sending: when its hold ends
    created_at   TEXT    NOT NULL,
    delivered_at TEXT,
    last_status  INTEGER,          -- the receiver's HTTP status of the last attempt
    last_error   TEXT
) STRICT, WITHOUT ROWID;
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_at_ms) WHERE status IN ('pending', 'sending');
CREATE INDEX webhook_outbox_listing ON webhook_outbox (created_at, delivery_id);

CREATE VIEW webhook_deliveries AS
SELECT delivery_id, app, webhook, event, session_id, turn_id, seq, status, attempts,
       iif(status IN ('pending', 'sending'), strftime('%Y-%m-%dT%H:%M:%fZ', next_at_ms / 1000.0, 'unixepoch'), NULL) AS next_at,
       created_at, delivered_at, last_status, last_error
FROM webhook_outbox;
