-- Webhook deliveries go out in order per (app, webhook, session): a delivery is
-- claimed only when no earlier one of its line is pending or being sent, so at most
-- one is in flight and a receiver sees a session's seqs never go back. A dead
-- letter sent again by hand (manual = 1) stands outside that order: it neither waits
-- for nor holds up the others.
ALTER TABLE webhook_outbox ADD COLUMN manual INTEGER NOT NULL DEFAULT 0 CHECK (manual IN (0, 1));
CREATE INDEX webhook_outbox_line ON webhook_outbox (app, webhook, session_id, seq) WHERE status IN ('pending', 'sending') AND manual = 0;
