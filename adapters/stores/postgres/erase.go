package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Erase removes the request's sessions — events, blobs nobody else references, read
// models, memories written in them, idempotency records, webhook deliveries — and,
// for a user's erasure, the owner's memories, idempotency records and sign-ins, in
// one transaction that also writes the receipt. The delete triggers let it through
// only while the sessions are named in erasing. PostgreSQL keeps deleted rows until
// VACUUM reclaims them (autovacuum does, in time). Errors: conflict (a session has a
// turn running, or was branched from meanwhile), not_found, invalid, internal.
func (s *Store) Erase(ctx context.Context, req projection.ErasureRequest) (projection.ErasureReceipt, error) {
	rec := projection.ErasureReceipt{ID: req.ID, Kind: req.Kind, Subject: req.Subject, By: req.By, At: req.At.UTC()}
	if req.ID == "" || req.Kind == "" || req.By == "" {
		return rec, events.Errorf(events.CodeInvalid, "an erasure needs an id, a kind and who asked")
	}
	err := s.inTx(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		c, erased, err := erase(ctx, tx, req)
		if err != nil {
			return err
		}
		rec.Counts, rec.Sessions = c, erased
		for _, id := range erased {
			s.apps.Delete(id) // an erased session's id may open a session again
		}
		counts, _ := json.Marshal(c)
		sessions, _ := json.Marshal(erased)
		_, err = tx.ExecContext(ctx, `INSERT INTO erasures (id, kind, subject, by_user, at, sessions, counts) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			rec.ID, rec.Kind, rec.Subject, rec.By, sqlrows.FormatTime(rec.At), string(sessions), string(counts))
		return err
	})
	return rec, err
}

func erase(ctx context.Context, tx *sql.Tx, req projection.ErasureRequest) (projection.ErasureCounts, []string, error) {
	var c projection.ErasureCounts
	exec := func(n *int, what, q string, args ...any) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("erase %s: %w", what, err)
		}
		k, _ := res.RowsAffected()
		*n += int(k)
		return nil
	}
	var unused int
	for _, id := range req.Sessions {
		if err := exec(&unused, "sessions", `INSERT INTO erasing (session_id) VALUES ($1) ON CONFLICT DO NOTHING`, id); err != nil {
			return c, nil, err
		}
	}
	if req.Owner != "" {
		if err := exec(&unused, "sessions", `INSERT INTO erasing (session_id)
			WITH RECURSIVE tree (id) AS (SELECT id FROM proj_sessions WHERE owner = $1
			                             UNION SELECT s.id FROM proj_sessions s JOIN tree t ON s.parent_id = t.id)
			SELECT id FROM tree ON CONFLICT DO NOTHING`, req.Owner); err != nil {
			return c, nil, err
		}
	}
	// An append's content references wait for the erasure, or it for them: what
	// another session refers to is never taken from under it (see queueContents).
	if _, err := tx.ExecContext(ctx, `LOCK TABLE content_refs IN SHARE MODE`); err != nil {
		return c, nil, fmt.Errorf("erase: lock content references: %w", err)
	}
	const in = sqlrows.ErasingSessions
	// Lock the sessions' rows: a branch or a turn that starts meanwhile waits, then
	// finds them gone.
	if _, err := tx.ExecContext(ctx, `SELECT id FROM proj_sessions WHERE id IN (SELECT session_id FROM erasing) FOR UPDATE`); err != nil {
		return c, nil, fmt.Errorf("erase: lock sessions: %w", err)
	}
	var orphan string
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(min(id), '') FROM proj_sessions WHERE parent_id IN (SELECT session_id FROM erasing)
		AND id NOT IN (SELECT session_id FROM erasing)`).Scan(&orphan); err != nil {
		return c, nil, fmt.Errorf("erase: find branches: %w", err)
	}
	if orphan != "" {
		return c, nil, events.Errorf(events.CodeConflict, "session %s was branched from a session being erased: erase again (with cascade=true)", orphan)
	}
	var running int
	var runningIn string
	if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(min(session_id), '') FROM proj_turns WHERE status = 'running' AND `+in).Scan(&running, &runningIn); err != nil {
		return c, nil, fmt.Errorf("erase: find running turns: %w", err)
	}
	if running > 0 {
		return c, nil, events.Errorf(events.CodeConflict, "session %s has a turn running: cancel it or let it end, then erase", runningIn)
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM proj_turns WHERE status = 'suspended' AND `+in).Scan(&c.SuspendedTurns); err != nil {
		return c, nil, fmt.Errorf("erase: count suspended turns: %w", err)
	}
	erased, err := ids(ctx, tx, `SELECT session_id FROM erasing ORDER BY session_id`)
	if err != nil {
		return c, nil, err
	}
	erased = askedFirst(req.Sessions, erased)
	hashes, err := ids(ctx, tx, `SELECT DISTINCT blob_hash FROM events WHERE blob_hash IS NOT NULL AND `+in)
	if err != nil {
		return c, nil, err
	}
	if err := exec(&c.Memories, "memories", `DELETE FROM memories m USING erasing e, proj_sessions s
		WHERE s.id = e.session_id AND m.app = s.app AND m.owner = s.owner AND m.key >= e.session_id || '/' AND m.key < e.session_id || '0'`); err != nil {
		return c, nil, err
	}
	for _, st := range sqlrows.SessionEraseSteps(&c) {
		if err := exec(st.Count, st.What, st.Query); err != nil {
			return c, nil, err
		}
	}
	for _, h := range hashes {
		if err := exec(&c.Blobs, "blobs", `DELETE FROM blobs WHERE hash = $1 AND NOT EXISTS (SELECT 1 FROM events WHERE blob_hash = $1)`, h); err != nil {
			return c, nil, err
		}
	}
	if req.Owner != "" {
		for _, st := range sqlrows.OwnerEraseSteps(&c) {
			if err := exec(st.Count, st.What, sqlrows.Dollar(st.Query), req.Owner); err != nil {
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
	return c, erased, nil
}

// askedFirst orders the erased sessions as asked for, then the rest by id.
func askedFirst(asked, all []string) []string {
	out := make([]string, 0, len(all))
	for _, id := range asked {
		if slices.Contains(all, id) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	for _, id := range all {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func ids(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// OwnerSessions lists the ids of the sessions user owns.
func (s *Store) OwnerSessions(ctx context.Context, owner string) ([]string, error) {
	return s.sessionIDs(ctx, `SELECT id FROM proj_sessions WHERE owner = $1 ORDER BY created_at, id`, owner)
}

// IdleSessions lists, by id, up to limit sessions of app after the id after whose
// last event is older than before.
func (s *Store) IdleSessions(ctx context.Context, app string, before time.Time, after string, limit int) ([]string, error) {
	return s.sessionIDs(ctx, `SELECT s.id FROM proj_sessions s
		WHERE s.app = $1 AND s.id > $2 AND (SELECT e.at FROM events e WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1) < $3
		ORDER BY s.id LIMIT $4`, app, after, sqlrows.FormatTime(before), limit)
}

// Erasures lists erasure receipts, oldest first, after the receipt with id after.
func (s *Store) Erasures(ctx context.Context, after string, limit int) ([]projection.ErasureReceipt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, kind, subject, by_user, at, sessions::text, counts::text FROM erasures
		WHERE $1 = '' OR (at, id) > (SELECT at, id FROM erasures WHERE id = $1) ORDER BY at, id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read erasures: %w", err)
	}
	return sqlrows.ScanReceipts(rows)
}
