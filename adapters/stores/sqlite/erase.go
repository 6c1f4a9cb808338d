package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Erase removes the request's sessions — their events, blobs nobody else
// references, projections, queued inputs, memories written in them, idempotency
// records and webhook deliveries — and, for a user's erasure, the owner's
// memories, idempotency records and sign-ins, in one transaction that also writes
// the receipt. The append-only triggers let the deletes through only while the
// sessions are named in the erasing table, which the same transaction clears.
// Afterwards the WAL is truncated, so (with secure_delete, on for every write) no
// erased byte stays in the database's files. Errors: conflict (a session has a turn
// running), not_found (no session to erase), internal.
func (s *Store) Erase(ctx context.Context, req projection.ErasureRequest) (projection.ErasureReceipt, error) {
	rec := projection.ErasureReceipt{ID: req.ID, Kind: req.Kind, Subject: req.Subject, By: req.By,
		At: req.At.UTC(), Sessions: append([]string{}, req.Sessions...)}
	if req.ID == "" || req.Kind == "" || req.By == "" {
		return rec, events.Errorf(events.CodeInvalid, "an erasure needs an id, a kind and who asked")
	}
	err := s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		c, erased, err := w.erase(ctx, req)
		if err != nil {
			return err
		}
		rec.Counts, rec.Sessions = c, erased
		counts, _ := json.Marshal(c)
		sessions, _ := json.Marshal(rec.Sessions)
		if _, err := w.conn.ExecContext(ctx, `INSERT INTO erasures (id, kind, subject, by_user, at, sessions, counts) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			rec.ID, rec.Kind, rec.Subject, rec.By, sqlrows.FormatTime(rec.At), string(sessions), string(counts)); err != nil {
			return fmt.Errorf("write the erasure receipt: %w", err)
		}
		return nil
	})
	if err != nil {
		return rec, err
	}
	scrubbed := s.truncateWAL(ctx) == nil
	rec.Scrubbed = &scrubbed
	return rec, nil
}

// erase runs inside the writer's transaction.
func (w *writer) erase(ctx context.Context, req projection.ErasureRequest) (projection.ErasureCounts, []string, error) {
	var c projection.ErasureCounts
	exec := func(n *int, what, q string, args ...any) error {
		res, err := w.conn.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("erase %s: %w", what, err)
		}
		k, _ := res.RowsAffected()
		*n += int(k)
		return nil
	}
	var unused int
	for _, id := range req.Sessions {
		if err := exec(&unused, "sessions", `INSERT INTO erasing (session_id) VALUES (?) ON CONFLICT DO NOTHING`, id); err != nil {
			return c, nil, err
		}
	}
	if req.Owner != "" { // and what the user made since the request was planned, with its branches
		if err := exec(&unused, "sessions", `INSERT INTO erasing (session_id)
			WITH RECURSIVE tree (id) AS (SELECT id FROM proj_sessions WHERE owner = ?
			                             UNION SELECT s.id FROM proj_sessions s JOIN tree t ON s.parent_id = t.id)
			SELECT id FROM tree WHERE true ON CONFLICT DO NOTHING`, req.Owner); err != nil {
			return c, nil, err
		}
	}
	const in = sqlrows.ErasingSessions
	var orphan string
	err := w.conn.QueryRowContext(ctx, `SELECT coalesce(min(id), '') FROM proj_sessions WHERE parent_id IN (SELECT session_id FROM erasing)
		AND id NOT IN (SELECT session_id FROM erasing)`).Scan(&orphan)
	if err != nil {
		return c, nil, fmt.Errorf("erase: find branches: %w", err)
	}
	if orphan != "" {
		return c, nil, events.Errorf(events.CodeConflict, "session %s was branched from a session being erased: erase again (with cascade=true)", orphan)
	}
	var running int
	var runningIn string
	err = w.conn.QueryRowContext(ctx, `SELECT count(*), coalesce(min(session_id), '') FROM proj_turns WHERE status = 'running' AND `+in).Scan(&running, &runningIn)
	if err != nil {
		return c, nil, fmt.Errorf("erase: find running turns: %w", err)
	}
	if running > 0 {
		return c, nil, events.Errorf(events.CodeConflict, "session %s has a turn running: cancel it or let it end, then erase", runningIn)
	}
	if err := w.conn.QueryRowContext(ctx, `SELECT count(*) FROM proj_turns WHERE status = 'suspended' AND `+in).Scan(&c.SuspendedTurns); err != nil {
		return c, nil, fmt.Errorf("erase: count suspended turns: %w", err)
	}
	erased, err := w.erasingSessions(ctx, req.Sessions)
	if err != nil {
		return c, nil, err
	}
	hashes, err := w.blobsOfErasing(ctx)
	if err != nil {
		return c, nil, err
	}
	// Memories are keyed session/turn/path within their app and owner: one range of
	// the key index per session.
	if err := exec(&c.Memories, "memories", `DELETE FROM memories WHERE rowid IN (SELECT m.rowid FROM erasing e
		JOIN proj_sessions s ON s.id = e.session_id
		JOIN memories m ON m.app = s.app AND m.owner = s.owner AND m.key >= e.session_id || '/' AND m.key < e.session_id || '0')`); err != nil {
		return c, nil, err
	}
	for _, st := range sqlrows.SessionEraseSteps(&c) {
		if err := exec(st.Count, st.What, st.Query); err != nil {
			return c, nil, err
		}
	}
	for _, h := range hashes {
		if err := exec(&c.Blobs, "blobs", `DELETE FROM blobs WHERE hash = ? AND NOT EXISTS (SELECT 1 FROM events WHERE blob_hash = ?)`, h, h); err != nil {
			return c, nil, err
		}
	}
	if req.Owner != "" {
		for _, st := range sqlrows.OwnerEraseSteps(&c) {
			if err := exec(st.Count, st.What, st.Query, req.Owner); err != nil {
				return c, nil, err
			}
		}
	}
	if err := exec(&unused, "sessions", `DELETE FROM erasing`); err != nil {
		return c, nil, err
	}
	if req.Owner == "" && c.Sessions == 0 {
		return c, nil, events.Errorf(events.CodeNotFound, "no session to erase")
	}
	w.txErased = append(w.txErased, erased...)
	return c, erased, nil
}

// erasingSessions lists the sessions named in the erasing table: those asked for
// first, in their order, then those the transaction added.
func (w *writer) erasingSessions(ctx context.Context, asked []string) ([]string, error) {
	rows, err := w.conn.QueryContext(ctx, `SELECT session_id FROM erasing ORDER BY session_id`)
	if err != nil {
		return nil, fmt.Errorf("erase: list sessions: %w", err)
	}
	defer rows.Close()
	named := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		named[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(named))
	for _, id := range asked {
		if named[id] {
			out = append(out, id)
			delete(named, id)
		}
	}
	rest := make([]string, 0, len(named))
	for id := range named {
		rest = append(rest, id)
	}
	sort.Strings(rest)
	return append(out, rest...), nil
}

// blobsOfErasing lists the blobs the erasing sessions' events reference.
func (w *writer) blobsOfErasing(ctx context.Context) ([]string, error) {
	rows, err := w.conn.QueryContext(ctx, `SELECT DISTINCT blob_hash FROM events
		WHERE blob_hash IS NOT NULL AND session_id IN (SELECT session_id FROM erasing)`)
	if err != nil {
		return nil, fmt.Errorf("erase: find blobs: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// truncateWAL checkpoints the whole WAL into the database and truncates it, between
// the writer's transactions. It does not wait: when a reader holds the WAL (a long
// read, a replication tool's) it fails at once, and appends go on.
func (s *Store) truncateWAL(ctx context.Context) error {
	return s.outsideTx(ctx, func(ctx context.Context, w *writer) error {
		if _, err := w.conn.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
			return err
		}
		defer w.conn.ExecContext(ctx, `PRAGMA busy_timeout = 5000`)
		var busy, frames, done int
		if err := w.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		if busy != 0 {
			return fmt.Errorf("checkpoint: readers hold the WAL")
		}
		return nil
	})
}

// OwnerSessions lists the ids of the sessions user owns.
func (s *Store) OwnerSessions(ctx context.Context, owner string) ([]string, error) {
	return s.sessionIDs(ctx, `SELECT id FROM proj_sessions WHERE owner = ? ORDER BY created_at, id`, owner)
}

// IdleSessions lists, by id, up to limit sessions of app after the id after whose
// last event is older than before.
func (s *Store) IdleSessions(ctx context.Context, app string, before time.Time, after string, limit int) ([]string, error) {
	return s.sessionIDs(ctx, `SELECT s.id FROM proj_sessions s
		WHERE s.app = ? AND s.id > ? AND (SELECT e.at FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1) < ?
		ORDER BY s.id LIMIT ?`, app, after, sqlrows.FormatTime(before), limit)
}

// Erasures lists erasure receipts, oldest first, after the receipt with id after
// ("" for the first page).
func (s *Store) Erasures(ctx context.Context, after string, limit int) ([]projection.ErasureReceipt, error) {
	rows, err := s.query(ctx, `SELECT id, kind, subject, by_user, at, sessions, counts FROM erasures
		WHERE ? = '' OR (at, id) > (SELECT at, id FROM erasures WHERE id = ?) ORDER BY at, id LIMIT ?`, after, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read erasures: %w", err)
	}
	return sqlrows.ScanReceipts(rows)
}

func (s *Store) sessionIDs(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	return sqlrows.All(rows, sqlrows.ScanString)
}
