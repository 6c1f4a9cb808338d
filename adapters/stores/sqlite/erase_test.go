package sqlite_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

func countRows(t *testing.T, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func erasure(id string, sessions ...string) projection.ErasureRequest {
	return projection.ErasureRequest{ID: id, Kind: projection.ErasureSession, Subject: sessions[0], By: "alice",
		At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Sessions: sessions}
}

// TestErasureKeepsSharedBlobs: a blob two sessions' events reference stays while
// one of them is left, and goes with the last.
func TestErasureKeepsSharedBlobs(t *testing.T) {
	t.Parallel()
	b := setup(t, sqlite.Options{BlobThreshold: 1024})
	big := strings.Repeat("y", 5000)
	for _, s := range []string{"s1", "s2"} {
		createSession(t, b, s)
		ev := events.MustNew("t1", "support/tool/c1", &events.ToolResulted{CallID: "c1", Tool: "dump", Output: big})
		if _, err := b.store.Append(b.ctx, s, 1, []events.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	db, _ := sql.Open("sqlite", "file:"+b.path+"?_pragma=busy_timeout(5000)")
	defer db.Close()
	if n := countRows(t, db, `SELECT count(*) FROM blobs`); n != 1 {
		t.Fatalf("blobs = %d, want the one both share", n)
	}
	rec, err := b.store.Erase(b.ctx, erasure("e1", "s1"))
	if err != nil || rec.Counts.Sessions != 1 || rec.Counts.Events != 2 || rec.Counts.Blobs != 0 {
		t.Fatalf("erase s1: %+v %v", rec, err)
	}
	evs, err := b.store.Events(b.ctx, "s2", 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("s2 after s1's erasure: %d events, %v", len(evs), err)
	}
	if tr, err := events.DecodeAs[*events.ToolResulted](evs[0]); err != nil || tr.Output != big {
		t.Fatalf("s2's blob: %v", err)
	}
	rec, err = b.store.Erase(b.ctx, erasure("e2", "s2"))
	if err != nil || rec.Counts.Blobs != 1 {
		t.Fatalf("erase s2: %+v %v", rec, err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM blobs`) + countRows(t, db, `SELECT count(*) FROM events`) + countRows(t, db, `SELECT count(*) FROM erasing`); n != 0 {
		t.Fatalf("%d rows left in blobs, events and erasing", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM erasures WHERE counts NOT LIKE '%yyyy%'`); n != 2 {
		t.Fatalf("receipts = %d, want 2", n)
	}
	if _, err := b.store.Erase(b.ctx, erasure("e3", "s2")); !isCode(err, events.CodeNotFound) {
		t.Fatalf("erase an erased session: %v", err)
	}
}

func isCode(err error, code events.Code) bool {
	var te *events.Error
	return errors.As(err, &te) && te.Code == code
}
