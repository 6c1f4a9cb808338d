package sqlrows

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/turnlog/turnlog/events"
)

// Migration is one numbered schema migration.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads the files NNNN_name.sql in dir of fsys, in order, and
// refuses gaps and bad names.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, p := range names {
		n := path.Base(p)
		num, _, ok := strings.Cut(n, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and '_'", n)
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: n, SQL: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.Name, i+1)
		}
	}
	return ms, nil
}

// MigrationSQL is a store's statements for its schema_migrations table: create it,
// read its newest version, record a version (version, name, applied at).
type MigrationSQL struct{ Create, Max, Record string }

// DB is a database or one connection of it.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// Migrate applies the migrations db lacks, each in its own transaction. A database
// newer than ms is refused (schema_too_new).
func Migrate(ctx context.Context, db DB, ms []Migration, q MigrationSQL, clock events.Clock) error {
	if _, err := db.ExecContext(ctx, q.Create); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, q.Max).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > len(ms) {
		return events.Errorf(events.CodeSchemaTooNew,
			"database schema version %d is newer than this turnlog binary knows (%d): upgrade turnlog", current, len(ms))
	}
	for _, m := range ms[current:] {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			tx.Rollback()
			return fmt.Errorf("apply migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, q.Record, m.Version, m.Name, clock().UTC().Format(time.RFC3339Nano)); err != nil {
			tx.Rollback()
			return fmt.Errorf("record migration %s: %w", m.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// Versions is how many migrations dir of fsys holds: the newest schema version a
// binary knows (0 when they do not load).
func Versions(fsys fs.FS, dir string) int {
	ms, err := LoadMigrations(fsys, dir)
	if err != nil {
		return 0
	}
	return len(ms)
}

// CheckSchema reads the database's schema version with maxQuery and refuses one
// other than want (another process migrated it further): schema_too_new.
func CheckSchema(ctx context.Context, db DB, maxQuery string, want int) error {
	var v int
	if err := db.QueryRowContext(ctx, maxQuery).Scan(&v); err != nil {
		return fmt.Errorf("store unreachable: %w", err)
	}
	if v != want {
		return events.Errorf(events.CodeSchemaTooNew, "database schema is at version %d, this binary knows %d", v, want)
	}
	return nil
}
