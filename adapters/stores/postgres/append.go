package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// Append implements events.Log: one transaction, durable when it returns.
func (s *Store) Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error) {
	out, _, err := s.append(ctx, fsm.Lease{Session: session}, after, evs, false)
	return out, err
}

// AppendLeased implements fsm.Cluster: Append (AppendUnsynced when unsynced) in the
// transaction that takes, renews or gives up the session's lease (fsm.Cluster says
// how), and returns the lease's token after it.
func (s *Store) AppendLeased(ctx context.Context, lease fsm.Lease, after int64, evs []events.Event, unsynced bool) ([]events.Event, int64, error) {
	switch {
	case lease.Token < 0:
		return nil, 0, events.FieldError(events.CodeInvalid, "lease.token", "is negative")
	case lease.Token == 0 && lease.Node == "":
		return nil, 0, events.FieldError(events.CodeInvalid, "lease.node", "is empty: a lease is taken for a node")
	case lease.TTL < 0:
		return nil, 0, events.FieldError(events.CodeInvalid, "lease.ttl", "is negative")
	case lease.Token == 0 && lease.TTL == 0:
		return nil, 0, events.FieldError(events.CodeInvalid, "lease.ttl", "is 0: a lease is taken for a while")
	}
	return s.append(ctx, lease, after, evs, unsynced)
}

// AppendUnsynced is Append whose commit does not wait for the WAL to reach the disk
// (synchronous_commit off): visible at once, kept by a crash of turnlog, and safe
// from a crash of the database with its next synced commit.
func (s *Store) AppendUnsynced(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error) {
	out, _, err := s.append(ctx, fsm.Lease{Session: session}, after, evs, true)
	return out, err
}

func validate(session string, evs []events.Event) error {
	if session == "" {
		return events.FieldError(events.CodeInvalid, "session", "is empty")
	}
	for i, ev := range evs {
		if err := sqlrows.CheckEvent(i, ev); err != nil {
			return err
		}
	}
	return nil
}

// append appends evs after seq after under lease (none: no token, no node), and
// returns the lease's token after it.
func (s *Store) append(ctx context.Context, lease fsm.Lease, after int64, evs []events.Event, unsynced bool) ([]events.Event, int64, error) {
	session := lease.Session
	if err := validate(session, evs); err != nil {
		return nil, 0, err
	}
	if len(evs) == 0 {
		return nil, lease.Token, nil
	}
	s.appending.RLock()
	defer s.appending.RUnlock()
	if err := s.closedError(); err != nil {
		return nil, 0, err
	}
	began := time.Now()
	out, token, err := s.appendPipelined(ctx, lease, after, evs, unsynced)
	if err != nil {
		return nil, 0, err
	}
	s.watch.Notify(map[string]int64{session: out[len(out)-1].Seq})
	s.notes.add(session)
	if s.opts.OnCommit != nil {
		s.opts.OnCommit(len(out), time.Since(began))
	}
	return out, token, nil
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

// RouteWebhooks makes every later append write an outbox row, in its own transaction,
// for each webhook the router names for an event it holds.
func (s *Store) RouteWebhooks(r projection.WebhookRouter) { s.router.Store(&r) }

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
