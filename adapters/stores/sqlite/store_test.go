package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/migrations"
	sqlitedrv "modernc.org/sqlite"
)

type testBundle struct {
	store *sqlite.Store
	path  string
	ctx   context.Context
}

func setup(t *testing.T, opts sqlite.Options) testBundle {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	}
	s, path := sqlite.MustOpen(t, opts)
	return testBundle{store: s, path: path, ctx: context.Background()}
}

func createSession(t *testing.T, b testBundle, id string) {
	t.Helper()
	ev := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "support"})
	if _, err := b.store.Append(b.ctx, id, 0, []events.Event{ev}); err != nil {
		t.Fatalf("create session: %v", err)
	}
}

func TestEventsAreAppendOnlyInSQLite(t *testing.T) {
	t.Parallel()
	b := setup(t, sqlite.Options{})
	createSession(t, b, "s1")
	db, err := sql.Open("sqlite", "file:"+b.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`UPDATE events SET data = '{}' WHERE session_id = 's1'`,
		`DELETE FROM events WHERE session_id = 's1'`,
		`DELETE FROM events`,
	} {
		_, err := db.Exec(q)
		var se *sqlitedrv.Error
		if !errors.As(err, &se) || se.Code()&0xff != 19 || !strings.Contains(err.Error(), "append-only") {
			t.Fatalf("%s: err = %v, want a constraint abort saying append-only", q, err)
		}
	}
	evs, err := b.store.Events(b.ctx, "s1", 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events after refused writes = %d, %v; want 1", len(evs), err)
	}
}

func TestInvalidJSONRefusedByCheck(t *testing.T) {
	t.Parallel()
	b := setup(t, sqlite.Options{})
	db, err := sql.Open("sqlite", "file:"+b.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`INSERT INTO events (session_id, seq, type, v, data, at) VALUES ('x', 1, 'T', 1, '{not json', 'now')`)
	if err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Fatalf("insert of invalid JSON: err = %v, want CHECK failure", err)
	}
}

func TestLargePayloadGoesToBlobTable(t *testing.T) {
	t.Parallel()
	b := setup(t, sqlite.Options{BlobThreshold: 1024})
	createSession(t, b, "s1")
	big := strings.Repeat("x", 5000)
	ev := events.MustNew("t1", "support/tool/c1", &events.ToolResulted{CallID: "c1", Tool: "dump", Output: big})
	for after := int64(1); after <= 2; after++ { // the same payload twice is stored once
		if _, err := b.store.Append(b.ctx, "s1", after, []events.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := b.store.Events(b.ctx, "s1", 1)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := events.DecodeAs[*events.ToolResulted](evs[0])
	if err != nil || tr.Output != big {
		t.Fatalf("blob round trip: err=%v len=%d", err, len(tr.Output))
	}
	db, _ := sql.Open("sqlite", "file:"+b.path)
	defer db.Close()
	var blobs, rowBytes int
	if err := db.QueryRow(`SELECT count(*) FROM blobs`).Scan(&blobs); err != nil || blobs != 1 {
		t.Fatalf("blobs = %d, %v; want 1", blobs, err)
	}
	if err := db.QueryRow(`SELECT max(length(data)) FROM events`).Scan(&rowBytes); err != nil || rowBytes > 200 {
		t.Fatalf("largest event row data = %d bytes, want a small reference", rowBytes)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, sqlite.Options{})
	b.store.Close()
	db, _ := sql.Open("sqlite", "file:"+b.path)
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '0999_future.sql', 'x')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := sqlite.Open(b.ctx, b.path, sqlite.Options{})
	if !events.IsCode(err, events.CodeSchemaTooNew) || !strings.Contains(err.Error(), "999") {
		t.Fatalf("open newer schema: err = %v, want schema_too_new naming 999", err)
	}
}

// TestOlderSchemaUpgrades: a database the first release made (schema version 1, a
// turn in it) gets the newer migrations on open, in order, and keeps its rows.
func TestOlderSchemaUpgrades(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, _ := sql.Open("sqlite", "file:"+path)
	v1, err := fs.ReadFile(migrations.FS, "0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{string(v1),
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`,
		`INSERT INTO schema_migrations VALUES (1, '0001_init.sql', '2026-11-01T00:00:00Z')`,
		`INSERT INTO proj_turns (session_id, turn_id, start_seq, status, input, agent, started_at) VALUES ('s', 't', 2, 'committed', 'hi', 'support', '2026-11-01T00:00:00Z')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	turn, err := s.Turn(context.Background(), "s", "t")
	s.Close()
	if err != nil || strings.Join(turn.Agents, ",") != "support" {
		t.Fatalf("the old turn after the upgrade: %+v %v", turn, err)
	}
	db, _ = sql.Open("sqlite", "file:"+path)
	defer db.Close()
	var version, indexes int
	var agents string
	db.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&version)
	db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN ('proj_turns_start', 'proj_interrupts_pending', 'proj_turns_running', 'proj_turns_suspended')`).Scan(&indexes)
	db.QueryRow(`SELECT agents FROM turns WHERE turn_id = 't'`).Scan(&agents)
	if version != sqlite.SchemaVersion() || indexes != 4 || agents != `["support"]` {
		t.Fatalf("after upgrade: version %d (want %d), indexes %d (want 4), turns.agents %q", version, sqlite.SchemaVersion(), indexes, agents)
	}
}

func TestBadSynchronousRefused(t *testing.T) {
	t.Parallel()
	_, err := sqlite.Open(context.Background(), t.TempDir()+"/x.db", sqlite.Options{Synchronous: "sometimes"})
	if !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), "synchronous") {
		t.Fatalf("err = %v, want invalid naming synchronous", err)
	}
}

// TestAuditTakesOnlyIntegerExitCodes: a tool's JSON output whose "exit_code" is not
// an integer (a tool of one's own may say anything) leaves the audit's exit code
// empty; it never fails the audit.
func TestAuditTakesOnlyIntegerExitCodes(t *testing.T) {
	t.Parallel()
	b := setup(t, sqlite.Options{})
	createSession(t, b, "s1")
	evs := []events.Event{events.MustNew("t1", "", &events.TurnStarted{Input: "hi", Agent: "a"})}
	for i, out := range []string{`{"exit_code":"n/a"}`, `{"exit_code":3}`, `{"exit_code":1.5}`} {
		path := fmt.Sprintf("a/tool/c%d", i)
		evs = append(evs, events.MustNew("t1", path, &events.ToolScheduled{CallID: fmt.Sprintf("c%d", i), Tool: "t", Arguments: []byte(`{}`)}),
			events.MustNew("t1", path, &events.ToolResulted{CallID: fmt.Sprintf("c%d", i), Tool: "t", Output: out}))
	}
	if _, err := b.store.Append(b.ctx, "s1", 1, evs); err != nil {
		t.Fatal(err)
	}
	audit, err := b.store.Audit(b.ctx, "s1")
	if err != nil || len(audit) != 3 {
		t.Fatalf("audit: %+v %v", audit, err)
	}
	if audit[0].ExitCode != nil || audit[1].ExitCode == nil || *audit[1].ExitCode != 3 || audit[2].ExitCode != nil {
		t.Fatalf("exit codes: %v %v %v", audit[0].ExitCode, audit[1].ExitCode, audit[2].ExitCode)
	}
}
