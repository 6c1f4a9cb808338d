package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/projection"
)

// TestTurnsCommittedBeforeSayCompleted: a database whose read model holds turns by
// the word turnlog used before ("committed") says "completed" of them once migrated:
// in the store's reads, the turns view and the branch points view.
func TestTurnsCommittedBeforeSayCompleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", dsn(path, Options{Synchronous: "OFF"}, roleWrite))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var before []sqlrows.Migration
	for _, m := range ms {
		if m.Name < "0015" {
			before = append(before, m)
		}
	}
	if len(before) == len(ms) {
		t.Fatal("no migration renames the turn statuses")
	}
	if err := sqlrows.Migrate(ctx, db, before, sqlrows.MigrationSQL{Create: qCreateMigrations, Max: qMaxMigration, Record: qRecordMigration}, time.Now); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO proj_turns (session_id, turn_id, start_seq, end_seq, status, input, agent, started_at, ended_at, end_agent) VALUES ('s', 't1', 2, 5, 'committed', 'hi', 'a', '2026-11-01T00:00:00Z', '2026-11-01T00:00:01Z', 'a')`,
		`INSERT INTO proj_turns (session_id, turn_id, start_seq, end_seq, status, input, agent, started_at, ended_at, error_code) VALUES ('s', 't2', 6, 7, 'canceled', 'again', 'a', '2026-11-01T00:00:02Z', '2026-11-01T00:00:03Z', 'canceled')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	s, err := Open(ctx, path, Options{Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	turns, err := s.Turns(ctx, "s")
	if err != nil || len(turns) != 2 || turns[0].Status != projection.TurnCompleted || turns[1].Status != projection.TurnCanceled {
		t.Fatalf("turns after the migration: %+v %v", turns, err)
	}
	var status string
	if err := s.read.QueryRow(`SELECT status FROM turns WHERE turn_id = 't1'`).Scan(&status); err != nil || status != "completed" {
		t.Fatalf("the turns view: %q %v", status, err)
	}
	var n int
	if err := s.read.QueryRow(`SELECT count(*) FROM branch_points WHERE session_id = 's'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("branch points: %d %v", n, err)
	}
	s.Close()
	raw, err := sql.Open("sqlite", dsn(path, Options{Synchronous: "OFF"}, roleWrite))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`UPDATE proj_turns SET status = 'committed' WHERE turn_id = 't1'`); err == nil {
		t.Fatal("the old word is still taken")
	}
}
