package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
	sqlite3 "modernc.org/sqlite"
)

const checkpointEvery = 1000 // commits between passive WAL checkpoints

type appendReq struct {
	ctx     context.Context
	session string
	after   int64
	evs     []events.Event
	run     func(context.Context, *writer, *sql.Tx) error // an exclusive job instead of an append
	out     []events.Event
	err     error
	done    chan struct{}
}

// Append implements events.Log. Many callers' appends share one transaction and
// one fsync; each caller returns once the commit holding its events is durable.
func (s *Store) Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error) {
	if session == "" {
		return nil, events.FieldError(events.CodeInvalid, "session", "is empty")
	}
	if len(evs) == 0 {
		return nil, nil
	}
	for i, ev := range evs {
		if ev.Type == "" || ev.V <= 0 || len(ev.Data) == 0 {
			return nil, events.FieldError(events.CodeInvalid, fmt.Sprintf("events[%d]", i), "type, version and data are required")
		}
	}
	req := &appendReq{ctx: ctx, session: session, after: after, evs: evs, done: make(chan struct{})}
	select {
	case s.reqs <- req:
	case <-s.done:
		return nil, events.Errorf(events.CodeInternal, "store is closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Once queued, the append is decided by the writer: wait for its answer even if
	// ctx ends, so a caller never mistakes a committed append for a failed one.
	<-req.done
	return req.out, req.err
}

// exclusive runs fn inside the writer's transaction, between group commits.
func (s *Store) exclusive(ctx context.Context, fn func(context.Context, *writer, *sql.Tx) error) error {
	req := &appendReq{ctx: ctx, run: fn, done: make(chan struct{})}
	select {
	case s.reqs <- req:
	case <-s.done:
		return events.Errorf(events.CodeInternal, "store is closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	<-req.done
	return req.err
}

type writer struct {
	s                                 *Store
	conn                              *sql.Conn
	lastSeq, insEvent, insBlob        *sql.Stmt
	sessOpen, sessMoved               *sql.Stmt
	turnOpen, turnProgress, turnClose *sql.Stmt
	historyAdd                        *sql.Stmt
	commits                           int
}

func newWriter(ctx context.Context, s *Store) (*writer, error) {
	conn, err := s.write.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{s: s, conn: conn}
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{{&w.lastSeq, qLastSeq}, {&w.insEvent, qInsertEvent}, {&w.insBlob, qInsertBlob},
		{&w.sessOpen, qSessionOpen}, {&w.sessMoved, qSessionMoved}, {&w.turnOpen, qTurnOpen},
		{&w.turnProgress, qTurnProgress}, {&w.turnClose, qTurnClose}, {&w.historyAdd, qHistoryAdd}} {
		if *p.dst, err = conn.PrepareContext(ctx, p.q); err != nil {
			conn.Close()
			return nil, fmt.Errorf("prepare %q: %w", p.q, err)
		}
	}
	return w, nil
}

func (w *writer) loop() {
	defer close(w.s.closed)
	defer w.conn.Close()
	for {
		var first *appendReq
		select {
		case first = <-w.s.reqs:
		case <-w.s.done:
			// Drain what was queued before Close so no caller waits forever.
			for {
				select {
				case r := <-w.s.reqs:
					w.commit([]*appendReq{r})
				default:
					return
				}
			}
		}
		batch := []*appendReq{first}
	fill:
		for len(batch) < w.s.opts.MaxBatch {
			select {
			case r := <-w.s.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		w.commit(batch)
	}
}

// commit writes a batch in one transaction; each request sits in a savepoint so a
// conflicting or invalid request fails alone.
func (w *writer) commit(batch []*appendReq) {
	ctx := context.Background()
	finish := func(err error) {
		for _, r := range batch {
			if err != nil && r.err == nil {
				r.err, r.out = err, nil
			}
			close(r.done)
		}
	}
	tx, err := w.conn.BeginTx(ctx, nil)
	if err != nil {
		finish(fmt.Errorf("begin append: %w", err))
		return
	}
	at := w.s.opts.Clock().UTC()
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT a"); err != nil {
			r.err = err
			continue
		}
		if r.run != nil {
			r.err = r.run(ctx, w, tx)
		} else {
			r.out, r.err = w.appendOne(ctx, tx, r, at)
		}
		if r.err != nil {
			_, err = tx.ExecContext(ctx, "ROLLBACK TO a")
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, "RELEASE a")
		}
		if err != nil {
			tx.Rollback()
			finish(fmt.Errorf("append savepoint: %w", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		finish(fmt.Errorf("commit append: %w", err))
		return
	}
	finish(nil)
	if w.commits++; w.commits%checkpointEvery == 0 {
		_, _ = w.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	}
}

func (w *writer) appendOne(ctx context.Context, tx *sql.Tx, r *appendReq, at time.Time) ([]events.Event, error) {
	var last int64
	if err := tx.StmtContext(ctx, w.lastSeq).QueryRowContext(ctx, r.session).Scan(&last); err != nil {
		return nil, fmt.Errorf("read last seq of %s: %w", r.session, err)
	}
	if last != r.after {
		return nil, &events.Error{Code: events.CodeConflict, Field: "seq",
			Message: fmt.Sprintf("session %s is at seq %d, not %d: another writer appended first", r.session, last, r.after)}
	}
	out := make([]events.Event, len(r.evs))
	for i, ev := range r.evs {
		ev.Session, ev.Seq, ev.At = r.session, r.after+int64(i)+1, at
		if err := w.insert(ctx, tx, ev); err != nil {
			return nil, err
		}
		if err := w.project(ctx, tx, ev); err != nil {
			return nil, fmt.Errorf("project %s/%d: %w", ev.Session, ev.Seq, err)
		}
		out[i] = ev
	}
	return out, nil
}

func (w *writer) insert(ctx context.Context, tx *sql.Tx, ev events.Event) error {
	data := ev.Data
	var blobHash any
	if len(data) > w.s.opts.BlobThreshold {
		sum := sha256.Sum256(data)
		h := "sha256:" + hex.EncodeToString(sum[:])
		if _, err := tx.StmtContext(ctx, w.insBlob).ExecContext(ctx, h, len(data), []byte(data)); err != nil {
			return fmt.Errorf("store blob %s: %w", h, err)
		}
		blobHash = h
		data = events.MustMarshal(blobRef{Blob: h, Size: len(ev.Data)})
	}
	_, err := tx.StmtContext(ctx, w.insEvent).ExecContext(ctx, ev.Session, ev.Seq, ev.Turn, ev.Type, ev.Path, ev.V,
		string(data), blobHash, formatTime(ev.At))
	if err != nil {
		if isConstraint(err) {
			return &events.Error{Code: events.CodeConflict, Field: "seq",
				Message: fmt.Sprintf("event %s/%d already exists", ev.Session, ev.Seq), Err: err}
		}
		return fmt.Errorf("insert event %s/%d: %w", ev.Session, ev.Seq, err)
	}
	return nil
}

// blobRef is what an event row holds when its data lives in the blobs table.
type blobRef struct {
	Blob string `json:"$blob"`
	Size int    `json:"size"`
}

func isConstraint(err error) bool {
	var se *sqlite3.Error
	return errors.As(err, &se) && se.Code()&0xff == 19
}

func (w *writer) project(ctx context.Context, tx *sql.Tx, ev events.Event) error {
	changes, err := projection.Changes(ev)
	if err != nil {
		return err
	}
	return w.applyChanges(ctx, tx, changes)
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
