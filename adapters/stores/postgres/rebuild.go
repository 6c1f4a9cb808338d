package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// projectionTables are emptied by rebuild, and dumped in this order.
var projectionTables = [...]string{"proj_interrupts", "proj_history", "proj_turns", "proj_spend", "proj_budget_extensions", "proj_eval_results", "proj_sessions", "proj_queue"}

const rebuildChunk = 2000

// Rebuild empties every projection table and refolds it from the events, in one
// transaction (other nodes' appends wait for it); it returns how many events it
// folded.
func (s *Store) Rebuild(ctx context.Context) (int64, error) {
	var n int64
	err := s.inTx(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		n, err = rebuildIn(ctx, tx)
		return err
	})
	return n, err
}

// rebuildIn empties the projection tables and refolds them, within tx.
func rebuildIn(ctx context.Context, tx *sql.Tx) (int64, error) {
	if _, err := tx.ExecContext(ctx, `LOCK TABLE events IN SHARE MODE`); err != nil {
		return 0, fmt.Errorf("hold appends: %w", err)
	}
	for _, t := range projectionTables {
		if _, err := tx.ExecContext(ctx, "DELETE FROM "+t); err != nil {
			return 0, fmt.Errorf("empty %s: %w", t, err)
		}
	}
	var n int64
	for lastID := int64(0); ; {
		evs, next, err := readChunk(ctx, tx, lastID)
		if err != nil {
			return n, err
		}
		lastID = next
		for _, ev := range evs {
			changes, err := projection.Changes(ev)
			if err == nil {
				err = applyChanges(ctx, tx, changes)
			}
			if err != nil {
				return n, fmt.Errorf("fold %s/%d: %w", ev.Session, ev.Seq, err)
			}
		}
		n += int64(len(evs))
		if len(evs) < rebuildChunk {
			return n, nil
		}
	}
}

func readChunk(ctx context.Context, tx *sql.Tx, after int64) ([]events.Event, int64, error) {
	rows, err := tx.QueryContext(ctx, `SELECT e.id, e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data::text, e.blob_hash, b.data, e.at
		FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.id > $1 ORDER BY e.id LIMIT $2`, after, rebuildChunk)
	if err != nil {
		return nil, after, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	var out []events.Event
	last := after
	for rows.Next() {
		ev, err := sqlrows.ScanEvent(idScanner{rows, &last})
		if err != nil {
			return nil, last, err
		}
		out = append(out, ev)
	}
	return out, last, rows.Err()
}

// idScanner reads a row's leading id, then hands the rest to ScanEvent.
type idScanner struct {
	rows *sql.Rows
	id   *int64
}

func (s idScanner) Scan(dest ...any) error {
	return s.rows.Scan(append([]any{s.id}, dest...)...)
}

// DumpProjections renders every projection table as text, rows in key order, so a
// rebuild can be compared with incremental maintenance.
func (s *Store) DumpProjections(ctx context.Context) (string, error) {
	var b strings.Builder
	for _, t := range projectionTables {
		rows, err := s.db.QueryContext(ctx, `SELECT row_to_json(t)::text FROM `+t+` t ORDER BY `+projectionOrder(t))
		if err != nil {
			return "", fmt.Errorf("dump %s: %w", t, err)
		}
		fmt.Fprintf(&b, "%s:\n", t)
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				rows.Close()
				return "", err
			}
			b.WriteString(line + "\n")
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return "", err
		}
		rows.Close()
	}
	return b.String(), nil
}

func projectionOrder(t string) string {
	switch t {
	case "proj_sessions":
		return "id"
	case "proj_turns", "proj_queue":
		return "session_id, turn_id"
	case "proj_interrupts":
		return "session_id, interrupt_id"
	case "proj_spend":
		return "session_id, agent, llm, day"
	case "proj_budget_extensions", "proj_eval_results":
		return "session_id, seq"
	}
	return "session_id, seq, idx"
}

// Watch returns a channel that receives after each commit, of any node, that appends
// to session (LISTEN/NOTIFY), and a function to stop watching. Register before
// reading, so no commit is missed.
func (s *Store) Watch(session string) (<-chan struct{}, func()) { return s.watch.Watch(session) }
