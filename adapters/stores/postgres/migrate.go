package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/migrations"
)

const (
	qCreateMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)`
	qMaxMigration     = `SELECT coalesce(max(version), 0) FROM schema_migrations`
	qRecordMigration  = `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`
	// migrationLock is the advisory lock nodes take to migrate one at a time.
	migrationLock = 7385621
)

func loadMigrations() ([]sqlrows.Migration, error) {
	return sqlrows.LoadMigrations(migrations.Postgres, "postgres")
}

// SchemaVersion is the newest PostgreSQL schema version this binary knows.
func SchemaVersion() int { return sqlrows.Versions(migrations.Postgres, "postgres") }

// migrate applies pending migrations, each in its own transaction, holding an
// advisory lock so that nodes starting together migrate one after another.
func migrate(ctx context.Context, db *sql.DB, clock events.Clock) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("take the migration lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrationLock)
	return sqlrows.Migrate(ctx, conn, ms, sqlrows.MigrationSQL{Create: qCreateMigrations, Max: qMaxMigration, Record: qRecordMigration}, clock)
}
