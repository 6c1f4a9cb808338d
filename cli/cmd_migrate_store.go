package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// cmdMigrateStore moves a SQLite deployment to PostgreSQL: it copies the file's
// events, blobs, memories, idempotency records, webhook outbox and erasure receipts
// into an empty database, in one transaction, and folds the read models there.
func cmdMigrateStore(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fset := newFlagSet(c, "migrate-store", &f, false)
	from := fset.String("from", "", "the SQLite database file to copy (stop the node that serves it first)")
	if err := parseFlags(fset, args); err != nil {
		return err
	}
	if err := requireArgs(fset, 0, "no arguments"); err != nil {
		return err
	}
	if *from == "" {
		return events.FieldError(events.CodeInvalid, "from", "is required: the SQLite file to copy")
	}
	if turnlog.IsPostgres(*from) {
		return events.FieldError(events.CodeInvalid, "from", "must be a SQLite file, not a PostgreSQL URL")
	}
	if !turnlog.IsPostgres(f.db) {
		return events.FieldError(events.CodeInvalid, "db", "must be the postgres:// URL to copy into (env TURNLOG_DB)")
	}
	if _, err := os.Stat(*from); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return events.Errorf(events.CodeNotFound, "from: %s does not exist", *from)
		}
		return events.Errorf(events.CodeInvalid, "from: %v", err)
	}
	src, err := sqlite.Open(ctx, *from, sqlite.Options{Synchronous: f.synchronous})
	if err != nil {
		return err
	}
	defer src.Close()
	// A turn still running when its process went away may lack counts in its row
	// (they were in that process's memory): they are counted from the log first.
	running, err := src.RunningTurns(ctx)
	if err != nil {
		return err
	}
	for _, t := range running {
		if err := src.HealTurnProgress(ctx, t.Session, t.ID); err != nil {
			return err
		}
	}
	dst, err := postgres.Open(ctx, f.db, postgres.Options{})
	if err != nil {
		return fmt.Errorf("open %s: %w", shownDB(f.db), err)
	}
	defer dst.Close()
	var loaded postgres.Loaded
	err = src.Snapshot(ctx, func(snap sqlrows.Snapshot) error {
		loaded, err = dst.Load(ctx, snap)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "moved %s to %s: %d sessions\n", *from, shownDB(f.db), loaded.Sessions)
	for _, t := range sqlrows.CopiedTables {
		fmt.Fprintf(c.stdout, "  %-17s %d rows\n", t.Name, loaded.Rows[t.Name])
	}
	return nil
}
