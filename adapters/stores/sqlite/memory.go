package sqlite

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"

	"github.com/turnlog/turnlog/projection"
)

// SaveMemory stores a memory once per (app, owner, key), in the writer's next commit.
func (s *Store) SaveMemory(ctx context.Context, m projection.Memory) (int64, bool, error) {
	var id int64
	var created bool
	err := s.exclusive(ctx, func(ctx context.Context, w *writer) error {
		res, err := w.conn.ExecContext(ctx, sqlrows.QMemorySave,
			m.App, m.Owner, m.Key, m.Label, m.Text, sqlrows.FormatTime(m.At), sqlrows.VectorBytes(m.Vector))
		if err != nil {
			return fmt.Errorf("save memory: %w", err)
		}
		n, _ := res.RowsAffected()
		created = n == 1
		return w.conn.QueryRowContext(ctx, sqlrows.QMemoryID, m.App, m.Owner, m.Key).Scan(&id)
	})
	return id, created, err
}

// SearchMemory finds the memories of (app, owner) holding any word of text, best
// bm25 first. The words are quoted, so nothing in text is FTS5 syntax.
func (s *Store) SearchMemory(ctx context.Context, app, owner, text string, limit int) ([]projection.MemoryHit, error) {
	match := ftsQuery(text)
	if match == "" {
		return nil, nil
	}
	rows, err := s.read.QueryContext(ctx, `SELECT m.id, m.label, m.text, m.created_at FROM memories_fts
		JOIN memories m ON m.id = memories_fts.rowid
		WHERE memories_fts MATCH ? AND m.app = ? AND m.owner = ?
		ORDER BY bm25(memories_fts), m.id DESC LIMIT ?`, match, app, owner, limit)
	if err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	return sqlrows.ScanHits(rows, false)
}

// MemoryVectors lists the newest memories of (app, owner) that have vectors.
func (s *Store) MemoryVectors(ctx context.Context, app, owner string, limit int) ([]projection.MemoryHit, error) {
	rows, err := s.read.QueryContext(ctx, sqlrows.QMemoryVectors, app, owner, limit)
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

// ftsQuery is text as an FTS5 query: each word quoted, any of them matching.
func ftsQuery(text string) string {
	var words []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		words = append(words, `"`+w+`"`)
	}
	return strings.Join(words, " OR ")
}
