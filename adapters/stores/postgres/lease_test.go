package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

func isCode(err error, code events.Code) bool { return events.IsCode(err, code) }

// TestLeasesFenceAppends: a session's lease is one node's at a time; once it
// expires another node takes it with a higher token, and the first node's appends
// under its old token are refused, as are its renewals.
func TestLeasesFenceAppends(t *testing.T) {
	t.Parallel()
	s := MustOpen(t, Options{})
	ctx := context.Background()
	created := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main"})
	if _, err := s.Append(ctx, "s1", 0, []events.Event{created}); err != nil {
		t.Fatal(err)
	}
	a, err := s.AcquireLease(ctx, "s1", "node-a", time.Hour)
	if err != nil || a == 0 {
		t.Fatalf("node a takes the lease: %d %v", a, err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "node-b", time.Hour); !isCode(err, events.CodeConflict) {
		t.Fatalf("node b while node a holds it: %v", err)
	}
	hint := func(n int) []events.Event {
		return []events.Event{events.MustNew("", "", &events.LoopDetected{Tool: "x", Repeats: n, Action: "hint"})}
	}
	if _, err := s.AppendLeased(ctx, fsm.Lease{Session: "s1", Token: a}, 1, hint(1), false); err != nil {
		t.Fatalf("an append under the lease: %v", err)
	}
	// Node a pauses past its lease: renew it to expire now, and node b takes over.
	if err := s.RenewLease(ctx, "s1", a, 0); err != nil {
		t.Fatal(err)
	}
	b, err := s.AcquireLease(ctx, "s1", "node-b", time.Hour)
	if err != nil || b <= a {
		t.Fatalf("node b takes the expired lease: token %d (a had %d), %v", b, a, err)
	}
	if _, err := s.AppendLeased(ctx, fsm.Lease{Session: "s1", Token: a}, 2, hint(2), true); !isCode(err, events.CodeConflict) {
		t.Fatalf("node a appends after it lost the lease: %v", err)
	}
	if err := s.RenewLease(ctx, "s1", a, time.Hour); !isCode(err, events.CodeConflict) {
		t.Fatalf("node a renews a lost lease: %v", err)
	}
	if err := s.ReleaseLease(ctx, "s1", a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendLeased(ctx, fsm.Lease{Session: "s1", Token: b}, 2, hint(2), false); err != nil {
		t.Fatalf("node b appends: %v (node a's release must not free node b's lease)", err)
	}
	if err := s.ReleaseLease(ctx, "s1", b); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "node-a", time.Hour); err != nil {
		t.Fatalf("a released lease is free: %v", err)
	}
	if evs, _ := s.Events(ctx, "s1", 0); len(evs) != 3 {
		t.Fatalf("the log holds %d events, want 3 (the fenced append wrote nothing)", len(evs))
	}
}
