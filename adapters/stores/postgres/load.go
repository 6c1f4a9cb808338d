package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
)

// loadBatch is how many rows one INSERT of a load carries, and loadBatchBytes how
// many bytes of blobs and vectors at most: a few big blobs go in an INSERT of their
// own, far under PostgreSQL's limit on a message.
const (
	loadBatch      = 200
	loadBatchBytes = 32 << 20
)

// Load fills this empty database from another store's snapshot — every copied table
// (sqlrows.CopiedTables) as it is, events with their seqs and commit times — and
// folds the read models from the events, all in one transaction: a load that fails
// leaves the database as it was. It returns how many rows it wrote to each table.
// Errors: conflict (the database already holds sessions, memories, keys,
// deliveries or receipts).
func (s *Store) Load(ctx context.Context, snap sqlrows.Snapshot) (Loaded, error) {
	loaded := Loaded{Rows: map[string]int64{}}
	err := s.inTx(ctx, false, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `LOCK TABLE events IN EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("hold appends: %w", err)
		}
		for _, t := range sqlrows.CopiedTables {
			var some bool
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.Name+`)`).Scan(&some); err != nil {
				return fmt.Errorf("look into %s: %w", t.Name, err)
			}
			if some {
				return events.Errorf(events.CodeConflict, "the database already holds rows in %s: a store is moved into an empty one", t.Name)
			}
		}
		for _, t := range sqlrows.CopiedTables {
			n, err := loadTable(ctx, tx, snap, t)
			if err != nil {
				return err
			}
			loaded.Rows[t.Name] = n
		}
		if _, err := rebuildIn(ctx, tx); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM proj_sessions`).Scan(&loaded.Sessions)
	})
	if err != nil {
		return Loaded{}, err
	}
	return loaded, nil
}

// Loaded is what a Load wrote.
type Loaded struct {
	Rows     map[string]int64 // by table
	Sessions int64            // sessions the events make
}

// loadTable copies one table's rows, loadBatch to an INSERT.
func loadTable(ctx context.Context, tx *sql.Tx, snap sqlrows.Snapshot, t sqlrows.CopiedTable) (int64, error) {
	var n int64
	batch := make([]any, 0, loadBatch*len(t.Columns))
	bytes := 0
	flush := func() error {
		bytes = 0
		rows := len(batch) / len(t.Columns)
		if rows == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, insertRows(t, rows), batch...); err != nil {
			return fmt.Errorf("write %s: %w", t.Name, err)
		}
		n += int64(rows)
		batch = batch[:0]
		return nil
	}
	err := snap.Rows(ctx, t, func(values []any) error {
		if len(values) != len(t.Columns) {
			return fmt.Errorf("a row of %s has %d values for %d columns", t.Name, len(values), len(t.Columns))
		}
		batch = append(batch, values...)
		for _, v := range values {
			if b, ok := v.([]byte); ok {
				bytes += len(b)
			}
		}
		if len(batch) == cap(batch) || bytes >= loadBatchBytes {
			return flush()
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	if err := flush(); err != nil {
		return n, err
	}
	if t.Identity { // new rows are numbered after the copied ones
		id := t.Columns[0]
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%s', '%s'), coalesce(max(%s), 0) + 1, false) FROM %s`, t.Name, id, id, t.Name)); err != nil {
			return n, fmt.Errorf("number %s after the copied rows: %w", t.Name, err)
		}
	}
	return n, nil
}

// insertRows is an INSERT of rows rows into t's columns.
func insertRows(t sqlrows.CopiedTable, rows int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s (%s) ", t.Name, strings.Join(t.Columns, ", "))
	if t.Identity {
		b.WriteString("OVERRIDING SYSTEM VALUE ")
	}
	b.WriteString("VALUES ")
	p := 1
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range t.Columns {
			if c > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "$%d", p)
			p++
		}
		b.WriteByte(')')
	}
	return b.String()
}
