package sqlite_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
)

// TestTheFileChangesView: file_changes shows one row a changed path, from an event
// kept in its row and from one kept as a blob; the audit a row a call and a revert.
func TestTheFileChangesView(t *testing.T) {
	t.Parallel()
	store, path := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	evs, rows := storetest.FileChangesLog("s1")
	if _, err := store.Append(context.Background(), "s1", 0, evs); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	var first, kind string
	if err := db.QueryRow(`SELECT count(*), min(path), min(before_kind) FROM file_changes WHERE session_id = 's1'`).Scan(&n, &first, &kind); err != nil || n != rows || first != "a.txt" || kind != "dir" {
		t.Fatalf("file_changes: %d rows (want %d), first %q, %q, %v", n, rows, first, kind, err)
	}
	storetest.CheckFilesAudit(t, store, "s1")
}
