package postgres

import (
	"context"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/storetest"
)

// TestTheFileChangesView: file_changes shows one row a changed path, from an event
// kept in its row and from one kept as a blob; the audit a row a call and a revert.
func TestTheFileChangesView(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, Options{MaxConns: 2})
	evs, rows := storetest.FileChangesLog("s1")
	ctx := context.Background()
	if _, err := s.Append(ctx, "s1", 0, evs); err != nil {
		t.Fatal(err)
	}
	var n int
	var first, kind string
	if err := s.db.QueryRowContext(ctx, `SELECT count(*), min(path), min(before_kind) FROM file_changes WHERE session_id = 's1'`).Scan(&n, &first, &kind); err != nil || n != rows || first != "a.txt" || kind != "dir" {
		t.Fatalf("file_changes: %d rows (want %d), first %q, %q, %v", n, rows, first, kind, err)
	}
	storetest.CheckFilesAudit(t, s, "s1")
}
