package sqlite

import (
	"context"
	"database/sql"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/migrations"
)

func loadMigrations() ([]sqlrows.Migration, error) { return sqlrows.LoadMigrations(migrations.FS, ".") }

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int { return sqlrows.Versions(migrations.FS, ".") }

func migrate(ctx context.Context, db *sql.DB, clock events.Clock) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return sqlrows.Migrate(ctx, db, ms, sqlrows.MigrationSQL{Create: qCreateMigrations, Max: qMaxMigration, Record: qRecordMigration}, clock)
}
