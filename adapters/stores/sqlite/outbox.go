package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// RouteWebhooks makes every later append write an outbox row, in its own
// transaction, for each webhook the router names for an event it holds.
func (s *Store) RouteWebhooks(r projection.WebhookRouter) { s.router.Store(&r) }

// enqueueWebhooks writes the outbox rows ev causes: it runs in the append's
// transaction, so a committed event has its deliveries and a rolled-back one none.
func (w *writer) enqueueWebhooks(ctx context.Context, ev events.Event) error {
	r := w.s.router.Load()
	kind := projection.WebhookEventOf(ev.Type)
	if r == nil || kind == "" {
		return nil
	}
	app, ok := w.apps[ev.Session]
	if !ok {
		if app, ok = w.txApps[ev.Session]; !ok {
			if err := w.conn.QueryRowContext(ctx, `SELECT app FROM proj_sessions WHERE id = ?`, ev.Session).Scan(&app); err != nil {
				return fmt.Errorf("read the app of %s: %w", ev.Session, err)
			}
			w.txApps[ev.Session] = app // kept once the transaction commits
		}
	}
	for _, hook := range (*r)(app, kind) {
		_, err := w.conn.ExecContext(ctx, `INSERT INTO webhook_outbox (delivery_id, app, webhook, event, session_id, seq, turn_id, status, next_at_ms, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (delivery_id) DO NOTHING`,
			projection.DeliveryID(app, hook, ev.Session, ev.Seq), app, hook, kind, ev.Session, ev.Seq, ev.Turn, ev.At.UnixMilli(), sqlrows.KeyTime(ev.At))
		if err != nil {
			return fmt.Errorf("write the webhook outbox: %w", err)
		}
	}
	return nil
}

// qLineHead holds for a delivery of the outbox o that heads its line: no earlier
// delivery of the same app, webhook and session is pending or being sent (or it was
// sent again by hand, outside the order).
const qLineHead = `(o.manual = 1 OR NOT EXISTS (SELECT 1 FROM webhook_outbox AS e INDEXED BY webhook_outbox_line
	WHERE e.app = o.app AND e.webhook = o.webhook AND e.session_id = o.session_id AND e.seq < o.seq
	AND e.status IN ('pending', 'sending') AND e.manual = 0))`

const qDeliveryCols = `SELECT delivery_id, app, webhook, event, session_id, turn_id, seq, status, attempts, next_at_ms, created_at, coalesce(delivered_at, ''), coalesce(last_status, 0), coalesce(last_error, '') FROM webhook_outbox`

// ClaimDeliveries takes up to limit deliveries due at now (pending ones whose time
// has come, and attempts whose lease ran out) and holds each until now+lease: their
// attempts count goes up by one. Another claim does not take them while they are held.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]projection.Delivery, error) {
	var out []projection.Delivery
	err := s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		out = nil // a batch that rolls back runs this again
		rows, err := w.conn.QueryContext(ctx, qDeliveryCols+` AS o INDEXED BY webhook_outbox_due WHERE o.status IN ('pending', 'sending') AND o.next_at_ms <= ? AND `+qLineHead+`
			ORDER BY o.next_at_ms LIMIT ?`, now.UnixMilli(), limit)
		if err != nil {
			return fmt.Errorf("read due deliveries: %w", err)
		}
		for rows.Next() {
			d, err := sqlrows.ScanDelivery(rows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		until := now.Add(lease)
		for i := range out {
			out[i].Status, out[i].Attempts, out[i].NextAt = projection.DeliverySending, out[i].Attempts+1, &until
			if _, err := w.conn.ExecContext(ctx, `UPDATE webhook_outbox SET status = 'sending', attempts = attempts + 1, next_at_ms = ? WHERE delivery_id = ?`, until.UnixMilli(), out[i].ID); err != nil {
				return fmt.Errorf("claim delivery: %w", err)
			}
		}
		return nil
	})
	return out, err
}

// RecordDelivery records the outcome of attempt number attempt. An attempt that no
// longer holds the delivery (its hold ran out and another attempt took it) changes
// nothing: only the holder's outcome counts.
func (s *Store) RecordDelivery(ctx context.Context, id string, attempt int, o projection.DeliveryOutcome) error {
	return s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		var delivered any
		next := o.NextAt
		if o.Status == projection.DeliveryDelivered {
			delivered = sqlrows.KeyTime(o.At)
		}
		if o.Status != projection.DeliveryPending {
			next = o.At
		}
		_, err := w.conn.ExecContext(ctx, sqlrows.QDeliveryOutcome,
			string(o.Status), next.UnixMilli(), delivered, sqlrows.NullInt(int64(o.HTTPStatus)), sqlrows.NullString(o.Error), id, attempt)
		return err
	})
}

// ReleaseDeliveries makes every held attempt due at now: at start, on one node, they
// belong to a process that is gone.
func (s *Store) ReleaseDeliveries(ctx context.Context, now time.Time) error {
	return s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		_, err := w.conn.ExecContext(ctx, `UPDATE webhook_outbox SET status = 'pending', next_at_ms = ? WHERE status = 'sending'`, now.UnixMilli())
		return err
	})
}

// NextDelivery is when the earliest pending or held delivery is due (ok false: none).
func (s *Store) NextDelivery(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	err := s.read.QueryRowContext(ctx, `SELECT min(o.next_at_ms) FROM webhook_outbox AS o INDEXED BY webhook_outbox_due WHERE o.status IN ('pending', 'sending') AND `+qLineHead).Scan(&next)
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
	rows, err := s.read.QueryContext(ctx, qDeliveryCols+sqlrows.QDeliveriesWhere, string(f.Status), f.Webhook, f.Session, f.After, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	out := []projection.Delivery{}
	for rows.Next() {
		d, err := sqlrows.ScanDelivery(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// Delivery returns one delivery. Errors: not_found.
func (s *Store) Delivery(ctx context.Context, id string) (projection.Delivery, error) {
	d, err := sqlrows.ScanDelivery(s.read.QueryRowContext(ctx, qDeliveryCols+` WHERE delivery_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return d, events.FieldError(events.CodeNotFound, "delivery_id", "no delivery %s", id)
	}
	return d, err
}

// Redeliver sends a dead-lettered delivery again, at now, with a fresh count of
// attempts. Errors: not_found; conflict when it is not dead.
func (s *Store) Redeliver(ctx context.Context, id string, now time.Time) (projection.Delivery, error) {
	err := s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		var status string
		if err := w.conn.QueryRowContext(ctx, `SELECT status FROM webhook_outbox WHERE delivery_id = ?`, id).Scan(&status); errors.Is(err, sql.ErrNoRows) {
			return events.FieldError(events.CodeNotFound, "delivery_id", "no delivery %s", id)
		} else if err != nil {
			return err
		}
		if status != string(projection.DeliveryDead) {
			return &events.Error{Code: events.CodeConflict, Field: "delivery_id", Message: fmt.Sprintf("delivery %s is %s; only a dead letter is sent again", id, status)}
		}
		_, err := w.conn.ExecContext(ctx, `UPDATE webhook_outbox SET status = 'pending', attempts = 0, next_at_ms = ?, last_error = NULL, last_status = NULL, manual = 1 WHERE delivery_id = ?`, now.UnixMilli(), id)
		return err
	})
	if err != nil {
		return projection.Delivery{}, err
	}
	return s.Delivery(ctx, id)
}

// DeliveryEvent returns the event a delivery tells of.
func (s *Store) DeliveryEvent(ctx context.Context, d projection.Delivery) (events.Event, error) {
	ev, err := sqlrows.ScanEvent(s.read.QueryRowContext(ctx, qEventAt, d.Session, d.Seq))
	if errors.Is(err, sql.ErrNoRows) {
		return ev, &events.Error{Code: events.CodeCorruptLog, Field: d.ID, Message: fmt.Sprintf("the event %s/%d is missing", d.Session, d.Seq)}
	}
	return ev, err
}
