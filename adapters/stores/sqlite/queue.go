package sqlite

import (
	"context"
	"fmt"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/projection"
)

// Queued lists a session's queued inputs, oldest first.
func (s *Store) Queued(ctx context.Context, session string) ([]projection.QueuedInput, error) {
	rows, err := s.query(ctx, qQueued, session)
	if err != nil {
		return nil, fmt.Errorf("read the queue of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanQueued)
}

// QueuedSessions lists the sessions with inputs waiting.
func (s *Store) QueuedSessions(ctx context.Context) ([]string, error) {
	return s.sessionIDs(ctx, qQueueSessions)
}
