package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// CreateUISession records a sign-in; expired ones are deleted on the way.
func (s *Store) CreateUISession(ctx context.Context, u projection.UISession) error {
	return s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		if _, err := w.conn.ExecContext(ctx, `DELETE FROM ui_sessions WHERE expires_at <= ?`, sqlrows.KeyTime(u.CreatedAt)); err != nil {
			return fmt.Errorf("expire ui sessions: %w", err)
		}
		admin := 0
		if u.Admin {
			admin = 1
		}
		_, err := w.conn.ExecContext(ctx, `INSERT INTO ui_sessions (id_hash, key_hash, user_name, admin, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			u.IDHash, u.KeyHash, u.User, admin, u.CSRF, sqlrows.KeyTime(u.CreatedAt), sqlrows.KeyTime(u.ExpiresAt))
		return err
	})
}

// UISession returns the live sign-in whose cookie hashes to idHash. Errors:
// not_found when there is none, it expired or it was revoked.
func (s *Store) UISession(ctx context.Context, idHash string, now time.Time) (projection.UISession, error) {
	u, err := sqlrows.ScanUISession(s.read.QueryRowContext(ctx, `SELECT id_hash, key_hash, user_name, admin, csrf, created_at, expires_at FROM ui_sessions
		WHERE id_hash = ? AND revoked_at IS NULL AND expires_at > ?`, idHash, sqlrows.KeyTime(now)))
	if errors.Is(err, sql.ErrNoRows) {
		return u, events.Errorf(events.CodeNotFound, "no such sign-in")
	}
	if err != nil {
		return u, fmt.Errorf("read ui session: %w", err)
	}
	return u, nil
}

// RevokeUISession ends a sign-in (signing out).
func (s *Store) RevokeUISession(ctx context.Context, idHash string, now time.Time) error {
	return s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		_, err := w.conn.ExecContext(ctx, `UPDATE ui_sessions SET revoked_at = ? WHERE id_hash = ? AND revoked_at IS NULL`, sqlrows.KeyTime(now), idHash)
		return err
	})
}
