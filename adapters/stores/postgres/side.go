package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// SaveMemory stores a memory once per (app, owner, key).
func (s *Store) SaveMemory(ctx context.Context, m projection.Memory) (int64, bool, error) {
	var id int64
	var created bool
	err := s.inTx(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, qMemorySave,
			m.App, m.Owner, m.Key, m.Label, m.Text, sqlrows.FormatTime(m.At), sqlrows.VectorBytes(m.Vector))
		if err != nil {
			return fmt.Errorf("save memory: %w", err)
		}
		n, _ := res.RowsAffected()
		created = n == 1
		return tx.QueryRowContext(ctx, qMemoryID, m.App, m.Owner, m.Key).Scan(&id)
	})
	return id, created, err
}

// SearchMemory finds the memories of (app, owner) holding any word of text, best
// ranked first, with PostgreSQL's full-text search; no character of text is query
// syntax.
func (s *Store) SearchMemory(ctx context.Context, app, owner, text string, limit int) ([]projection.MemoryHit, error) {
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `WITH q AS (SELECT to_tsquery('english', $3) AS query)
		SELECT m.id, m.label, m.text, m.created_at FROM memories m, q
		WHERE m.app = $1 AND m.owner = $2 AND m.words @@ q.query
		ORDER BY ts_rank(m.words, q.query) DESC, m.id DESC LIMIT $4`, app, owner, strings.Join(words, " | "), limit)
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	return sqlrows.ScanHits(rows, false)
}

// MemoryVectors lists the newest memories of (app, owner) that have vectors.
func (s *Store) MemoryVectors(ctx context.Context, app, owner string, limit int) ([]projection.MemoryHit, error) {
	rows, err := s.db.QueryContext(ctx, qMemoryVectors, app, owner, limit)
	if err != nil {
		return nil, fmt.Errorf("read memory vectors: %w", err)
	}
	return sqlrows.ScanHits(rows, true)
}

// SessionOwner is the app and owner of a session.
func (s *Store) SessionOwner(ctx context.Context, session string) (string, string, error) {
	sess, err := s.Session(ctx, session)
	if err != nil {
		return "", "", err
	}
	return sess.App, sess.Owner, nil
}

// The key and memory statements both stores run (sqlrows), in PostgreSQL's
// parameters.
var (
	qMemorySave    = sqlrows.Dollar(sqlrows.QMemorySave)
	qMemoryID      = sqlrows.Dollar(sqlrows.QMemoryID)
	qMemoryVectors = sqlrows.Dollar(sqlrows.QMemoryVectors)
	qKeyGet        = sqlrows.Dollar(sqlrows.QKeyGet)
	qKeyTarget     = sqlrows.Dollar(sqlrows.QKeyTarget)
	qKeyRelease    = sqlrows.Dollar(sqlrows.QKeyRelease)
)

// ClaimKey takes (owner, key) for a request unless a live record holds it: then it
// returns that record and claimed false. An expired record is replaced. One
// statement (turnlog_claim_key), again if the record that held the key was released
// between its insert and its read.
func (s *Store) ClaimKey(ctx context.Context, r projection.IdempotencyRecord, now time.Time) (projection.IdempotencyRecord, bool, error) {
	for tries := 1; ; tries++ {
		var claimed bool
		row := s.db.QueryRowContext(ctx, `SELECT * FROM turnlog_claim_key($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			r.Owner, r.Key, r.Route, r.BodyHash, r.Session, r.Turn, sqlrows.KeyTime(r.CreatedAt), sqlrows.KeyTime(r.ExpiresAt), sqlrows.KeyTime(now))
		got, err := sqlrows.ScanKey(claimedRow{row, &claimed})
		switch {
		case isNoRows(err) && tries < 3:
			continue // the record that held the key was given up between the two
		case err != nil:
			return got, false, storageError(fmt.Errorf("claim idempotency key: %w", err))
		case claimed:
			return r, true, nil
		}
		return got, false, nil
	}
}

// claimedRow reads a claim's first column (claimed) before the key's record.
type claimedRow struct {
	row     *sql.Row
	claimed *bool
}

func (c claimedRow) Scan(dest ...any) error { return c.row.Scan(append([]any{c.claimed}, dest...)...) }

// Key returns the record of (owner, key). Errors: sql.ErrNoRows when there is none.
func (s *Store) Key(ctx context.Context, owner, key string) (projection.IdempotencyRecord, error) {
	return sqlrows.ScanKey(s.db.QueryRowContext(ctx, qKeyGet, owner, key))
}

// SetKeyTarget records what the request made that claimed (owner, key) at
// claimedAt. Errors: conflict (that claim is no longer the key's, or made something).
func (s *Store) SetKeyTarget(ctx context.Context, owner, key string, claimedAt time.Time, session, turn string, startSeq int64) error {
	res, err := s.db.ExecContext(ctx, qKeyTarget, session, turn, startSeq, owner, key, sqlrows.KeyTime(claimedAt))
	return sqlrows.OneKeyRow(res, err, key)
}

// ReleaseKey forgets the claim of (owner, key) made at claimedAt, when it made
// nothing; any other claim of the key stays.
func (s *Store) ReleaseKey(ctx context.Context, owner, key string, claimedAt time.Time) error {
	_, err := s.db.ExecContext(ctx, qKeyRelease, owner, key, sqlrows.KeyTime(claimedAt))
	return err
}

// CreateUISession records a sign-in; expired ones are deleted on the way.
func (s *Store) CreateUISession(ctx context.Context, u projection.UISession) error {
	return s.inTx(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM ui_sessions WHERE expires_at <= $1`, sqlrows.KeyTime(u.CreatedAt)); err != nil {
			return fmt.Errorf("expire ui sessions: %w", err)
		}
		admin := 0
		if u.Admin {
			admin = 1
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO ui_sessions (id_hash, key_hash, user_name, admin, csrf, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			u.IDHash, u.KeyHash, u.User, admin, u.CSRF, sqlrows.KeyTime(u.CreatedAt), sqlrows.KeyTime(u.ExpiresAt))
		return err
	})
}

// UISession returns the live sign-in whose cookie hashes to idHash. Errors:
// not_found when there is none, it expired or it was revoked.
func (s *Store) UISession(ctx context.Context, idHash string, now time.Time) (projection.UISession, error) {
	u, err := sqlrows.ScanUISession(s.db.QueryRowContext(ctx, `SELECT id_hash, key_hash, user_name, admin, csrf, created_at, expires_at FROM ui_sessions
		WHERE id_hash = $1 AND revoked_at IS NULL AND expires_at > $2`, idHash, sqlrows.KeyTime(now)))
	if isNoRows(err) {
		return u, events.Errorf(events.CodeNotFound, "no such sign-in")
	}
	if err != nil {
		return u, fmt.Errorf("read ui session: %w", err)
	}
	return u, nil
}

// RevokeUISession ends a sign-in (signing out).
func (s *Store) RevokeUISession(ctx context.Context, idHash string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE ui_sessions SET revoked_at = $1 WHERE id_hash = $2 AND revoked_at IS NULL`, sqlrows.KeyTime(now), idHash)
	return err
}
