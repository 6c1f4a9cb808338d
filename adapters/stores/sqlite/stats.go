package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
)

// Stats is what the store holds now, for an operator's gauges.
type Stats struct {
	RunningTurns, WaitingTurns int64 // waiting: suspended for people's answers
	QueuedInputs               int64
	OutboxPending              int64 // webhook deliveries not yet delivered nor dead
	DBBytes, WALBytes          int64
}

const (
	qOpenTurns = `SELECT count(*) FILTER (WHERE status = 'running'), count(*) FILTER (WHERE status = 'suspended')
		FROM proj_turns WHERE status IN ('running', 'suspended')`
	qQueuedInputs  = `SELECT count(*) FROM proj_queue WHERE status = 'queued'`
	qOutboxPending = `SELECT count(*) FROM webhook_outbox WHERE status IN ('pending', 'sending')`
)

// Stats counts the open turns, queued inputs and pending webhook deliveries (each
// from a partial index) and sizes the database file and its WAL.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	if err := s.read.QueryRowContext(ctx, qOpenTurns).Scan(&st.RunningTurns, &st.WaitingTurns); err != nil {
		return st, err
	}
	if err := s.read.QueryRowContext(ctx, qQueuedInputs).Scan(&st.QueuedInputs); err != nil {
		return st, err
	}
	if err := s.read.QueryRowContext(ctx, qOutboxPending).Scan(&st.OutboxPending); err != nil {
		return st, err
	}
	for path, n := range map[string]*int64{s.path: &st.DBBytes, s.path + "-wal": &st.WALBytes} {
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist): // no WAL right after a truncating checkpoint
		case err != nil:
			return st, err
		default:
			*n = fi.Size()
		}
	}
	return st, nil
}
