package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// Append implements events.Log: one transaction, durable when it returns.
func (s *Store) Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error) {
	return s.append(ctx, fsm.Lease{Session: session}, after, evs, false)
}

// AppendLeased implements fsm.Cluster: Append (AppendUnsynced when unsynced) in a
// transaction that first checks lease is still the session's (fence).
func (s *Store) AppendLeased(ctx context.Context, lease fsm.Lease, after int64, evs []events.Event, unsynced bool) ([]events.Event, error) {
	if lease.Token == 0 {
		return nil, events.FieldError(events.CodeInvalid, "lease", "names no token")
	}
	return s.append(ctx, lease, after, evs, unsynced)
}

// AppendUnsynced is Append whose commit does not wait for the WAL to reach the disk
// (synchronous_commit off): visible at once, kept by a crash of turnlog, and safe
// from a crash of the database with its next synced commit.
func (s *Store) AppendUnsynced(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error) {
	return s.append(ctx, fsm.Lease{Session: session}, after, evs, true)
}

func validate(session string, evs []events.Event) error {
	if session == "" {
		return events.FieldError(events.CodeInvalid, "session", "is empty")
	}
	for i, ev := range evs {
		if ev.Type == "" || ev.V <= 0 || len(ev.Data) == 0 {
			return events.FieldError(events.CodeInvalid, fmt.Sprintf("events[%d]", i), "type, version and data are required")
		}
	}
	return nil
}

// append appends evs after seq after, fenced by lease when it has a token.
func (s *Store) append(ctx context.Context, lease fsm.Lease, after int64, evs []events.Event, unsynced bool) ([]events.Event, error) {
	session := lease.Session
	if err := validate(session, evs); err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, nil
	}
	if err := s.closedError(); err != nil {
		return nil, err
	}
	began := time.Now()
	var out []events.Event
	err := s.inTx(ctx, unsynced, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if err := fence(ctx, tx, lease); err != nil {
			return err
		}
		out, err = s.appendIn(ctx, tx, session, after, evs)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.watch.Notify(map[string]int64{session: out[len(out)-1].Seq})
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(len(out), time.Since(began))
	}
	return out, nil
}

// inTx runs fn in a transaction that, once begun, is decided whole even if ctx ends:
// a caller never mistakes a committed append for a failed one.
func (s *Store) inTx(ctx context.Context, unsynced bool, fn func(context.Context, *sql.Tx) error) error {
	ctx = context.WithoutCancel(ctx)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return storageError(fmt.Errorf("begin: %w", err))
	}
	if unsynced {
		if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			tx.Rollback()
			return storageError(err)
		}
	}
	if err := fn(ctx, tx); err != nil {
		tx.Rollback()
		return storageError(err)
	}
	if err := tx.Commit(); err != nil {
		return storageError(fmt.Errorf("commit: %w", err))
	}
	return nil
}

func (s *Store) appendIn(ctx context.Context, tx *sql.Tx, session string, after int64, evs []events.Event) ([]events.Event, error) {
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE session_id = $1`, session).Scan(&last); err != nil {
		return nil, fmt.Errorf("read last seq of %s: %w", session, err)
	}
	if last != after {
		return nil, &events.Error{Code: events.CodeConflict, Field: "seq",
			Message: fmt.Sprintf("session %s is at seq %d, not %d: another writer appended first", session, last, after)}
	}
	if last == 0 && !events.OpensSession(evs[0].Type) {
		return nil, events.Errorf(events.CodeNotFound, "session %s not found (it was never created, or it was erased)", session)
	}
	at := s.opts.Clock().UTC()
	out := make([]events.Event, len(evs))
	var app string
	for i, ev := range evs {
		ev.Session, ev.Seq, ev.At = session, after+int64(i)+1, at
		if err := s.insert(ctx, tx, ev); err != nil {
			return nil, err
		}
		changes, err := projection.Changes(ev)
		if err == nil {
			err = applyChanges(ctx, tx, changes)
		}
		if err != nil {
			return nil, fmt.Errorf("project %s/%d: %w", ev.Session, ev.Seq, err)
		}
		if app, err = s.enqueueWebhooks(ctx, tx, ev, app); err != nil {
			return nil, err
		}
		out[i] = ev
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, commitsChannel, s.scope+"/"+session); err != nil {
		return nil, fmt.Errorf("notify the commit: %w", err)
	}
	return out, nil
}

func (s *Store) insert(ctx context.Context, tx *sql.Tx, ev events.Event) error {
	data := ev.Data
	var blobHash any
	if len(data) > s.opts.BlobThreshold {
		sum := sha256.Sum256(data)
		h := "sha256:" + hex.EncodeToString(sum[:])
		if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (hash, size, data) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING`, h, len(data), []byte(data)); err != nil {
			return fmt.Errorf("store blob %s: %w", h, err)
		}
		blobHash = h
		data = events.MustMarshal(sqlrows.BlobRef{Blob: h, Size: len(ev.Data)})
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO events (session_id, seq, turn_id, type, path, v, data, blob_hash, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		ev.Session, ev.Seq, ev.Turn, ev.Type, ev.Path, ev.V, string(data), blobHash, sqlrows.FormatTime(ev.At))
	if err != nil {
		switch state := sqlState(err); {
		case state == "23505" && constraintName(err) == "events_session_id_seq_key":
			return &events.Error{Code: events.CodeConflict, Field: "seq", Message: fmt.Sprintf("event %s/%d already exists: another writer appended first", ev.Session, ev.Seq), Err: err}
		case state == "23514" || strings.HasPrefix(state, "22"):
			// A check, or data the json type or a view's function cannot take.
			return &events.Error{Code: events.CodeInvalid, Field: "data", Message: fmt.Sprintf("event %s/%d holds what the store cannot keep", ev.Session, ev.Seq), Err: err}
		}
		return fmt.Errorf("insert event %s/%d: %w", ev.Session, ev.Seq, err)
	}
	return nil
}

// RouteWebhooks makes every later append write an outbox row, in its own transaction,
// for each webhook the router names for an event it holds.
func (s *Store) RouteWebhooks(r projection.WebhookRouter) { s.router.Store(&r) }

func (s *Store) enqueueWebhooks(ctx context.Context, tx *sql.Tx, ev events.Event, app string) (string, error) {
	r := s.router.Load()
	kind := projection.WebhookEventOf(ev.Type)
	if r == nil || kind == "" {
		return app, nil
	}
	if app == "" {
		if err := tx.QueryRowContext(ctx, `SELECT app FROM proj_sessions WHERE id = $1`, ev.Session).Scan(&app); err != nil {
			return "", fmt.Errorf("read the app of %s: %w", ev.Session, err)
		}
	}
	for _, hook := range (*r)(app, kind) {
		_, err := tx.ExecContext(ctx, `INSERT INTO webhook_outbox (delivery_id, app, webhook, event, session_id, seq, turn_id, status, next_at_ms, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9) ON CONFLICT (delivery_id) DO NOTHING`,
			projection.DeliveryID(app, hook, ev.Session, ev.Seq), app, hook, kind, ev.Session, ev.Seq, ev.Turn, ev.At.UnixMilli(), sqlrows.KeyTime(ev.At))
		if err != nil {
			return "", fmt.Errorf("write the webhook outbox: %w", err)
		}
	}
	return app, nil
}

// constraintName is the constraint a PostgreSQL error names, or "".
func constraintName(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.ConstraintName
	}
	return ""
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// storageError types a write the database refused for want of space or an I/O
// error: nothing of it was written, and it may be sent again.
func storageError(err error) error {
	switch sqlState(err) {
	case "53100": // disk_full
		return &events.Error{Code: events.CodeStorageFull, Message: "the database's disk is full: nothing of this was written; send it again once there is space", Err: err}
	case "58030": // io_error
		return &events.Error{Code: events.CodeStorageFailed, Message: "the database could not write (an I/O error): nothing of this was written", Err: err}
	}
	return err
}
