package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
)

// Snapshot calls fn with the copied tables (sqlrows.CopiedTables) as they stand now:
// every read fn makes sees the same moment, whatever is appended meanwhile.
func (s *Store) Snapshot(ctx context.Context, fn func(sqlrows.Snapshot) error) error {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin snapshot: %w", err)
	}
	defer tx.Rollback()
	// A WAL snapshot starts at the transaction's first read: make it now.
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
		return fmt.Errorf("begin snapshot: %w", err)
	}
	return fn(txSnapshot{tx})
}

type txSnapshot struct{ tx *sql.Tx }

func (s txSnapshot) Rows(ctx context.Context, t sqlrows.CopiedTable, each func([]any) error) error {
	rows, err := s.tx.QueryContext(ctx, `SELECT `+strings.Join(t.Columns, ", ")+` FROM `+t.Name+` ORDER BY `+t.Order)
	if err != nil {
		return fmt.Errorf("read %s: %w", t.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		values := make([]any, len(t.Columns))
		ptrs := make([]any, len(values))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("read %s: %w", t.Name, err)
		}
		if err := each(values); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", t.Name, err)
	}
	return nil
}
