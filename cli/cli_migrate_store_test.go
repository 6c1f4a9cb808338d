package cli

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/events"
)

// TestMigrateStoreCommand: turnlog migrate-store copies a SQLite file's sessions into
// an empty PostgreSQL database, which then serves them; it refuses a filled
// database, a missing file (creating none) and a target that is not PostgreSQL,
// naming the flag; the password never shows in what it prints.
func TestMigrateStoreCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "turnlog.db")
	_, stderr, err := runCLI(t, "run", "--db", db, "where is order 42?")
	if err != nil {
		t.Fatalf("run: %v %s", err, stderr)
	}
	session := strings.TrimSpace(strings.TrimPrefix(strings.Split(stderr, "\n")[0], "session "))
	dsn := postgres.TestSchemaDSN(t)
	out, _, err := runCLI(t, "migrate-store", "--from", db, "--db", dsn)
	if err != nil || !strings.Contains(out, "1 sessions") || !strings.Contains(out, "events") {
		t.Fatalf("migrate-store: %v\n%s", err, out)
	}
	if password := passwordOf(t, dsn); password == "" || strings.Contains(out, password) {
		t.Fatalf("the output shows the password (or the DSN has none):\n%s", out)
	}
	pg := postgres.MustOpenOn(t, dsn)
	evs, err := pg.Events(context.Background(), session, 0)
	if err != nil || len(evs) == 0 {
		t.Fatalf("the moved session %s: %d events, %v", session, len(evs), err)
	}
	// The store commands work on the moved database as on the file.
	exported, _, err := runCLI(t, "export", "--db", dsn, session)
	if want, _, _ := runCLI(t, "export", "--db", db, session); err != nil || exported != want {
		t.Fatalf("export from postgres: %v\n%s\nfrom the file:\n%s", err, exported, want)
	}
	if out, _, err := runCLI(t, "rebuild", "--db", dsn); err != nil || !strings.Contains(out, "rebuilt projections from") {
		t.Fatalf("rebuild: %v %s", err, out)
	}
	if out, _, err := runCLI(t, "migrate", "--db", dsn); err != nil || !strings.Contains(out, fmt.Sprintf("schema version %d", postgres.SchemaVersion())) {
		t.Fatalf("migrate: %v %s", err, out)
	}
	if _, _, err := runCLI(t, "backup", "--db", dsn, filepath.Join(dir, "copy.db")); !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("backup of postgres: %v", err)
	}
	if _, _, err := runCLI(t, "migrate-store", "--from", db, "--db", dsn); !events.IsCode(err, events.CodeConflict) {
		t.Errorf("a second move into the filled database: %v", err)
	}
	missing := filepath.Join(dir, "nothing.db")
	if _, _, err := runCLI(t, "migrate-store", "--from", missing, "--db", dsn); !events.IsCode(err, events.CodeNotFound) || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("migrate-store created the missing file")
	}
	if out, _, err := runCLI(t, "erase", "--db", dsn, "--by", "ops", session); err != nil || !strings.Contains(out, session) {
		t.Fatalf("erase from postgres: %v %s", err, out)
	}
	if _, _, err := runCLI(t, "export", "--db", dsn, session); !events.IsCode(err, events.CodeNotFound) {
		t.Fatalf("export of the erased session: %v", err)
	}
	for _, args := range [][]string{
		{"migrate-store", "--db", dsn},
		{"migrate-store", "--from", db, "--db", filepath.Join(dir, "other.db")},
		{"migrate-store", "--from", dsn, "--db", dsn},
	} {
		_, _, err := runCLI(t, args...)
		want := "from"
		if args[1] == "--from" && args[2] == db {
			want = "db"
		}
		if !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v", args[1:], err)
		}
	}
}

// passwordOf is the password in a PostgreSQL URL.
func passwordOf(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := u.User.Password()
	return p
}
