package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/projection"
)

// Queued lists a session's queued inputs, oldest first.
func (s *Store) Queued(ctx context.Context, session string) ([]projection.QueuedInput, error) {
	rows, err := s.query(ctx, qQueued, session)
	if err != nil {
		return nil, fmt.Errorf("read the queue of %s: %w", session, err)
	}
	defer rows.Close()
	var out []projection.QueuedInput
	for rows.Next() {
		var q projection.QueuedInput
		var status, at string
		if err := rows.Scan(&q.Session, &q.Turn, &q.Input, &q.By, &status, &at, &q.Seq); err != nil {
			return nil, err
		}
		q.Status = projection.QueueStatus(status)
		q.QueuedAt, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, q)
	}
	return out, rows.Err()
}

// QueuedSessions lists the sessions with inputs waiting.
func (s *Store) QueuedSessions(ctx context.Context) ([]string, error) {
	return s.sessionIDs(ctx, qQueueSessions)
}
