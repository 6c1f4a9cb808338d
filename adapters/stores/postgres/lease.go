package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

var _ fsm.Leaser = (*Store)(nil)

// AcquireLease takes session's lease for node until ttl from now (the database's
// clock, so nodes' clocks need not agree) when it is free, expired or node's
// already, and returns its new token. Errors: conflict (another node holds it).
func (s *Store) AcquireLease(ctx context.Context, session, node string, ttl time.Duration) (int64, error) {
	var token int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO session_leases AS l (session_id, node, token, expires_at)
		VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 microsecond')
		ON CONFLICT (session_id) DO UPDATE SET node = $2, token = l.token + 1, expires_at = clock_timestamp() + $3 * interval '1 microsecond'
		WHERE l.expires_at < clock_timestamp() OR l.node = $2
		RETURNING token`, session, node, ttl.Microseconds()).Scan(&token)
	if isNoRows(err) {
		return 0, events.Errorf(events.CodeConflict, "session %s is busy on another node", session)
	}
	if err != nil {
		return 0, storageError(fmt.Errorf("take the lease of %s: %w", session, err))
	}
	return token, nil
}

// RenewLease extends the lease with token by ttl from now. Errors: conflict (it was
// lost: another node took the session over).
func (s *Store) RenewLease(ctx context.Context, session string, token int64, ttl time.Duration) error {
	res, err := s.db.ExecContext(ctx, `UPDATE session_leases SET expires_at = clock_timestamp() + $3 * interval '1 microsecond'
		WHERE session_id = $1 AND token = $2 AND expires_at > '-infinity'`, session, token, ttl.Microseconds())
	if err != nil {
		return fmt.Errorf("renew the lease of %s: %w", session, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return events.Errorf(events.CodeConflict, "the lease of session %s was lost", session)
	}
	return nil
}

// ReleaseLease gives the lease with token up (a lease lost meanwhile stays). Its row
// stays, expired for ever, so that the next taking raises the token again: a token
// is never given twice for a session, and an append of a node that paused past its
// lease is refused whoever held the session since.
func (s *Store) ReleaseLease(ctx context.Context, session string, token int64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE session_leases SET expires_at = '-infinity' WHERE session_id = $1 AND token = $2`, session, token)
	return err
}

var (
	_ fsm.Store   = (*Store)(nil)
	_ fsm.Cluster = (*Store)(nil)
)

// HealTurnProgress has nothing to do here: PostgreSQL writes a running turn's counts
// with every step, so no crash loses them.
func (s *Store) HealTurnProgress(context.Context, string, string) error { return nil }
