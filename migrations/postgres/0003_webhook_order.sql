-- Webhook deliveries go out in order per (app, webhook, session): a delivery is
-- claimed only when no earlier one of its line is pending or being sent, so at most
-- one is in flight, on every node, and a receiver sees a session's seqs never go
-- back. A dead letter sent again by hand (manual) stands outside that order.
ALTER TABLE webhook_outbox ADD COLUMN manual boolean NOT NULL DEFAULT false;
CREATE INDEX webhook_outbox_line ON webhook_outbox (app, webhook, session_id, seq) WHERE status IN ('pending', 'sending') AND NOT manual;
