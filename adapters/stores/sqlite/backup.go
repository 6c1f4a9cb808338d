package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/turnlog/turnlog/events"
)

// BackupReport says what a backup holds.
type BackupReport struct {
	Events, Sessions int64
	Bytes            int64
}

// Backup writes a consistent copy of the database at path to out, also while a
// turnlog serves on it: SQLite's VACUUM INTO, in one read transaction of a read-only
// connection of its own, so appends go on meanwhile (in WAL mode a reader blocks no
// writer). The copy holds every transaction committed before it began, and nothing
// half-written. It is written beside out and renamed there once PRAGMA
// integrity_check passes, so out is either missing or whole. While it runs, the WAL
// cannot be checkpointed past the copy's snapshot and grows. Errors: invalid (out
// exists), or what SQLite says.
func Backup(ctx context.Context, path, out string) (BackupReport, error) {
	var rep BackupReport
	if _, err := os.Stat(out); err == nil {
		return rep, events.FieldError(events.CodeInvalid, "out", "%s exists: a backup never overwrites a file", out)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	if _, err := os.Stat(path); err != nil {
		return rep, fmt.Errorf("the database: %w", err)
	}
	src, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return rep, err
	}
	defer src.Close()
	partial := out + ".partial"
	os.Remove(partial) // left by a backup that was cut short
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, partial); err != nil {
		os.Remove(partial)
		return rep, fmt.Errorf("copy %s: %w", path, err)
	}
	rep, err = checkCopy(ctx, partial)
	if err != nil {
		os.Remove(partial)
		return rep, err
	}
	if err := os.Rename(partial, out); err != nil {
		os.Remove(partial)
		return rep, err
	}
	return rep, nil
}

// checkCopy runs SQLite's integrity check on a copy, fsyncs it, and counts what it
// holds.
func checkCopy(ctx context.Context, path string) (BackupReport, error) {
	var rep BackupReport
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return rep, err
	}
	defer db.Close()
	var verdict string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&verdict); err != nil {
		return rep, err
	}
	if verdict != "ok" {
		return rep, fmt.Errorf("the copy fails its integrity check: %s", verdict)
	}
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM proj_sessions)`).Scan(&rep.Events, &rep.Sessions); err != nil {
		return rep, err
	}
	f, err := os.Open(path)
	if err != nil {
		return rep, err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return rep, err
	}
	fi, err := f.Stat()
	if err != nil {
		return rep, err
	}
	rep.Bytes = fi.Size()
	return rep, nil
}
