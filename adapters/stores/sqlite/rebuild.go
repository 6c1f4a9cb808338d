package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

const rebuildChunk = 2000

// Rebuild empties every projection table and refolds it from the events, in one
// transaction owned by the writer; it returns how many events it folded.
func (s *Store) Rebuild(ctx context.Context) (int64, error) {
	var n int64
	err := s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		n = 0 // a batch that rolls back runs this again
		w.progress.rebuilt()
		for _, t := range projectionTables {
			if _, err := w.conn.ExecContext(ctx, "DELETE FROM "+t); err != nil {
				return fmt.Errorf("empty %s: %w", t, err)
			}
		}
		progress := progressBuffer{}
		for lastID := int64(0); ; {
			evs, next, err := readChunk(ctx, w.conn, lastID)
			lastID = next
			if err != nil {
				return err
			}
			for _, ev := range evs {
				changes, err := projection.Changes(ev)
				if err == nil {
					changes = progress.absorb(changes)
					err = w.applyChanges(ctx, changes)
				}
				if err != nil {
					return fmt.Errorf("fold %s/%d: %w", ev.Session, ev.Seq, err)
				}
			}
			n += int64(len(evs))
			if len(evs) < rebuildChunk {
				return w.applyChanges(ctx, progress.drain())
			}
		}
	})
	return n, err
}

// progressBuffer sums a turn's TurnProgressed changes during a rebuild and releases
// the sum just before the turn closes (or at the end), so a turn costs one UPDATE
// instead of one per model and tool call. Sums are order-free, so the result equals
// applying every change as it came.
type progressBuffer map[[2]string]projection.TurnProgressed

func (b progressBuffer) absorb(changes []projection.Change) []projection.Change {
	var out []projection.Change
	for _, c := range changes {
		switch c := c.(type) {
		case projection.TurnProgressed:
			key := [2]string{c.Session, c.Turn}
			b[key] = b[key].Add(c)
			continue
		case projection.TurnClosed:
			key := [2]string{c.Session, c.Turn}
			if p, ok := b[key]; ok {
				p.Session, p.Turn = c.Session, c.Turn
				out = append(out, p)
				delete(b, key)
			}
		}
		out = append(out, c)
	}
	return out
}

func (b progressBuffer) drain() []projection.Change {
	var out []projection.Change
	for key, p := range b {
		p.Session, p.Turn = key[0], key[1]
		out = append(out, p)
	}
	return out
}

// readChunk reads the next events in global append order after the row id lastID.
func readChunk(ctx context.Context, conn *sql.Conn, lastID int64) ([]events.Event, int64, error) {
	rows, err := conn.QueryContext(ctx, qEventsFromID, lastID, rebuildChunk)
	if err != nil {
		return nil, lastID, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	var out []events.Event
	for rows.Next() {
		ev, err := sqlrows.ScanEvent(idScanner{rows, &lastID})
		if err != nil {
			return nil, lastID, err
		}
		out = append(out, ev)
	}
	return out, lastID, rows.Err()
}

// idScanner scans a leading row id before the event columns.
type idScanner struct {
	sc sqlrows.Scanner
	id *int64
}

func (s idScanner) Scan(dest ...any) error { return s.sc.Scan(append([]any{s.id}, dest...)...) }
