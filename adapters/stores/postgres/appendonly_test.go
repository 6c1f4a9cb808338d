package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
)

// TestEventsAreAppendOnlyInPostgres: the database itself refuses UPDATE, DELETE and
// TRUNCATE of events and blobs outside an erasure; the events stay.
func TestEventsAreAppendOnlyInPostgres(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, Options{BlobThreshold: 100})
	ctx := context.Background()
	created := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main"})
	big := events.MustNew("t1", "main/tool/c1", &events.ToolResulted{CallID: "c1", Tool: "dump", Output: strings.Repeat("x", 500)})
	if _, err := s.Append(ctx, "s1", 0, []events.Event{created, big}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE events SET data = '{}' WHERE session_id = 's1'`,
		`DELETE FROM events WHERE session_id = 's1'`,
		`TRUNCATE events CASCADE`,
		`UPDATE blobs SET size = 0`,
		`DELETE FROM blobs`,
		`TRUNCATE blobs CASCADE`,
	} {
		_, err := s.db.ExecContext(ctx, q)
		if err == nil || sqlState(err) != "23000" || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want an integrity violation saying append-only", q, err)
		}
	}
	if evs, err := s.Events(ctx, "s1", 0); err != nil || len(evs) != 2 {
		t.Fatalf("events after refused writes: %d, %v", len(evs), err)
	}
}
