package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"

	"github.com/turnlog/turnlog/projection"
)

// ClaimKey records r unless its (owner, key) is already recorded and not expired at
// now: then it returns that record and claimed false. Expired records are deleted on
// the way.
func (s *Store) ClaimKey(ctx context.Context, r projection.IdempotencyRecord, now time.Time) (projection.IdempotencyRecord, bool, error) {
	var existing projection.IdempotencyRecord
	claimed := false
	err := s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		claimed = false // a batch that rolls back runs this again
		if _, err := w.conn.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE expires_at <= ?`, sqlrows.KeyTime(now)); err != nil {
			return fmt.Errorf("expire idempotency keys: %w", err)
		}
		res, err := w.conn.ExecContext(ctx, sqlrows.QKeyClaim,
			r.Owner, r.Key, r.Route, r.BodyHash, r.Session, r.Turn, sqlrows.KeyTime(r.CreatedAt), sqlrows.KeyTime(r.ExpiresAt))
		if err != nil {
			return fmt.Errorf("claim idempotency key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			claimed = true
			return nil
		}
		existing, err = sqlrows.ScanKey(w.conn.QueryRowContext(ctx, sqlrows.QKeyGet, r.Owner, r.Key))
		return err
	})
	if claimed {
		return r, true, err
	}
	return existing, false, err
}

// Key returns the record of (owner, key). Errors: sql.ErrNoRows when there is none.
func (s *Store) Key(ctx context.Context, owner, key string) (projection.IdempotencyRecord, error) {
	return sqlrows.ScanKey(s.read.QueryRowContext(ctx, sqlrows.QKeyGet, owner, key))
}

// SetKeyTarget records what a claimed key's request made.
func (s *Store) SetKeyTarget(ctx context.Context, owner, key string, claimedAt time.Time, session, turn string, startSeq int64) error {
	return s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		res, err := w.conn.ExecContext(ctx, sqlrows.QKeyTarget, session, turn, startSeq, owner, key, sqlrows.KeyTime(claimedAt))
		return sqlrows.OneKeyRow(res, err, key)
	})
}

// ReleaseKey forgets a claim whose request did nothing (it was refused), so that the
// request may be made again with the same key.
func (s *Store) ReleaseKey(ctx context.Context, owner, key string, claimedAt time.Time) error {
	return s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		_, err := w.conn.ExecContext(ctx, sqlrows.QKeyRelease, owner, key, sqlrows.KeyTime(claimedAt))
		return err
	})
}
