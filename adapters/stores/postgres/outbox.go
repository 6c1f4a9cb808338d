package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// The outbox statements both stores run (sqlrows), in PostgreSQL's parameters.
var (
	qDeliveriesPage  = qDeliveryCols + sqlrows.Dollar(sqlrows.QDeliveriesWhere)
	qDeliveryOutcome = sqlrows.Dollar(sqlrows.QDeliveryOutcome)
)

// qLineHead holds for a delivery of the outbox o that heads its line: no earlier
// delivery of the same app, webhook and session is pending or being sent (or it was
// sent again by hand, outside the order). A row another node holds locked is still
// seen here, so its line waits: at most one delivery of a line is in flight.
const qLineHead = `(o.manual OR NOT EXISTS (SELECT 1 FROM webhook_outbox e
	WHERE e.app = o.app AND e.webhook = o.webhook AND e.session_id = o.session_id AND e.seq < o.seq
	AND e.status IN ('pending', 'sending') AND NOT e.manual))`

const (
	deliveryCols  = `delivery_id, app, webhook, event, session_id, turn_id, seq, status, attempts, next_at_ms, created_at, coalesce(delivered_at, ''), coalesce(last_status, 0), coalesce(last_error, '')`
	qDeliveryCols = `SELECT ` + deliveryCols + ` FROM webhook_outbox`
)

// ClaimDeliveries takes up to limit deliveries due at now (pending ones whose time
// has come, and attempts whose hold ran out) and holds each until now+lease; their
// attempts count goes up by one. Rows another node is claiming at the same moment are
// skipped, so each delivery is taken by one node.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]projection.Delivery, error) {
	var out []projection.Delivery
	err := s.inTx(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `WITH due AS (
				SELECT o.delivery_id FROM webhook_outbox o WHERE o.status IN ('pending', 'sending') AND o.next_at_ms <= $1 AND `+qLineHead+`
				ORDER BY o.next_at_ms LIMIT $2 FOR UPDATE OF o SKIP LOCKED)
			UPDATE webhook_outbox o SET status = 'sending', attempts = o.attempts + 1, next_at_ms = $3
			FROM due WHERE o.delivery_id = due.delivery_id
			RETURNING o.delivery_id, o.app, o.webhook, o.event, o.session_id, o.turn_id, o.seq, o.status, o.attempts, o.next_at_ms, o.created_at,
				coalesce(o.delivered_at, ''), coalesce(o.last_status, 0), coalesce(o.last_error, '')`,
			now.UnixMilli(), limit, now.Add(lease).UnixMilli())
		if err != nil {
			return fmt.Errorf("claim due deliveries: %w", err)
		}
		out, err = sqlrows.All(rows, sqlrows.ScanDelivery)
		return err
	})
	return out, err
}

// RecordDelivery records the outcome of attempt number attempt. An attempt that no
// longer holds the delivery changes nothing: only the holder's outcome counts.
func (s *Store) RecordDelivery(ctx context.Context, id string, attempt int, o projection.DeliveryOutcome) error {
	var delivered any
	next := o.NextAt
	if o.Status == projection.DeliveryDelivered {
		delivered = sqlrows.KeyTime(o.At)
	}
	if o.Status != projection.DeliveryPending {
		next = o.At
	}
	_, err := s.db.ExecContext(ctx, qDeliveryOutcome,
		string(o.Status), next.UnixMilli(), delivered, sqlrows.NullInt(int64(o.HTTPStatus)), sqlrows.NullString(o.Error), id, attempt)
	return err
}

// ReleaseDeliveries does nothing here: with several nodes, an attempt held at one
// node's start may be another live node's, and a held attempt whose node is gone is
// claimed again once its hold runs out.
func (s *Store) ReleaseDeliveries(context.Context, time.Time) error { return nil }

// NextDelivery is when the earliest pending or held delivery is due (ok false: none).
func (s *Store) NextDelivery(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT min(o.next_at_ms) FROM webhook_outbox o WHERE o.status IN ('pending', 'sending') AND `+qLineHead).Scan(&next)
	if err != nil || !next.Valid {
		return time.Time{}, false, err
	}
	return time.UnixMilli(next.Int64), true, nil
}

// Deliveries lists deliveries, newest first.
func (s *Store) Deliveries(ctx context.Context, f projection.DeliveryFilter) ([]projection.Delivery, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	rows, err := s.db.QueryContext(ctx, qDeliveriesPage, string(f.Status), f.Webhook, f.Session, f.After, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	out, err := sqlrows.All(rows, sqlrows.ScanDelivery)
	if out == nil && err == nil {
		out = []projection.Delivery{}
	}
	return out, err
}

// Delivery returns one delivery. Errors: not_found.
func (s *Store) Delivery(ctx context.Context, id string) (projection.Delivery, error) {
	d, err := sqlrows.ScanDelivery(s.db.QueryRowContext(ctx, qDeliveryCols+` WHERE delivery_id = $1`, id))
	if isNoRows(err) {
		return d, events.FieldError(events.CodeNotFound, "delivery_id", "no delivery %s", id)
	}
	return d, err
}

// Redeliver sends a dead-lettered delivery again, at now, with a fresh count of
// attempts. Errors: not_found; conflict when it is not dead.
func (s *Store) Redeliver(ctx context.Context, id string, now time.Time) (projection.Delivery, error) {
	err := s.inTx(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		var status string
		if err := tx.QueryRowContext(ctx, `SELECT status FROM webhook_outbox WHERE delivery_id = $1 FOR UPDATE`, id).Scan(&status); isNoRows(err) {
			return events.FieldError(events.CodeNotFound, "delivery_id", "no delivery %s", id)
		} else if err != nil {
			return err
		}
		if status != string(projection.DeliveryDead) {
			return &events.Error{Code: events.CodeConflict, Field: "delivery_id", Message: fmt.Sprintf("delivery %s is %s; only a dead letter is sent again", id, status)}
		}
		_, err := tx.ExecContext(ctx, `UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_at_ms = $1, last_error = NULL, last_status = NULL, manual = true WHERE delivery_id = $2`, now.UnixMilli(), id)
		return err
	})
	if err != nil {
		return projection.Delivery{}, err
	}
	return s.Delivery(ctx, id)
}

// DeliveryEvent returns the event a delivery tells of.
func (s *Store) DeliveryEvent(ctx context.Context, d projection.Delivery) (events.Event, error) {
	ev, err := sqlrows.ScanEvent(s.db.QueryRowContext(ctx, `SELECT e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data::text, e.blob_hash, b.data, e.at
		FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.session_id = $1 AND e.seq = $2`, d.Session, d.Seq))
	if isNoRows(err) {
		return ev, &events.Error{Code: events.CodeCorruptLog, Field: d.ID, Message: fmt.Sprintf("the event %s/%d is missing", d.Session, d.Seq)}
	}
	return ev, err
}
