package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

func isCode(err error, code events.Code) bool { return events.IsCode(err, code) }

// leaseStore is a store holding session s1, created.
func leaseStore(t *testing.T) (*Store, context.Context) {
	t.Helper()
	s := MustOpen(t, Options{})
	ctx := context.Background()
	created := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main"})
	if _, err := s.Append(ctx, "s1", 0, []events.Event{created}); err != nil {
		t.Fatal(err)
	}
	return s, ctx
}

// hint is an event to append to s1, the nth.
func hint(n int) []events.Event {
	return []events.Event{events.MustNew("", "", &events.LoopDetected{Tool: "x", Repeats: n, Action: "hint"})}
}

// TestLeasesFenceAppends: a session's lease is one node's at a time; once it
// expires another node takes it with a higher token, and the first node's appends
// under its old token are refused, as are its renewals.
func TestLeasesFenceAppends(t *testing.T) {
	t.Parallel()
	s, ctx := leaseStore(t)
	a, err := s.AcquireLease(ctx, "s1", "node-a", time.Hour)
	if err != nil || a == 0 {
		t.Fatalf("node a takes the lease: %d %v", a, err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "node-b", time.Hour); !isCode(err, events.CodeConflict) {
		t.Fatalf("node b while node a holds it: %v", err)
	}
	if _, _, err := s.AppendLeased(ctx, fsm.Lease{Session: "s1", Token: a}, 1, hint(1), false); err != nil {
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
	if _, _, err := s.AppendLeased(ctx, fsm.Lease{Session: "s1", Token: a}, 2, hint(2), true); !isCode(err, events.CodeConflict) {
		t.Fatalf("node a appends after it lost the lease: %v", err)
	}
	if err := s.RenewLease(ctx, "s1", a, time.Hour); !isCode(err, events.CodeConflict) {
		t.Fatalf("node a renews a lost lease: %v", err)
	}
	if err := s.ReleaseLease(ctx, "s1", a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AppendLeased(ctx, fsm.Lease{Session: "s1", Token: b}, 2, hint(2), false); err != nil {
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

// TestAppendsTakeRenewAndGiveUpTheLease: a run's first append takes the session's
// lease, its appends renew it, its last gives it up, all inside the append's one
// transaction: an append refused for any reason moves no lease.
func TestAppendsTakeRenewAndGiveUpTheLease(t *testing.T) {
	t.Parallel()
	s, ctx := leaseStore(t)
	lease := func(token int64, node string, release bool) fsm.Lease {
		return fsm.Lease{Session: "s1", Token: token, Node: node, TTL: time.Hour, Release: release}
	}
	if _, _, err := s.AppendLeased(ctx, lease(0, "node-a", false), 0, hint(1), false); !isCode(err, events.CodeConflict) {
		t.Fatalf("a stale first append: %v", err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "node-b", time.Hour); err != nil {
		t.Fatalf("a refused append took the lease: %v", err)
	}
	if _, _, err := s.AppendLeased(ctx, lease(0, "node-a", false), 1, hint(1), false); !isCode(err, events.CodeConflict) {
		t.Fatalf("node a's first append while node b holds the lease: %v", err)
	}
	b, err := s.AcquireLease(ctx, "s1", "node-b", time.Hour) // node b's again: the same node renews
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, "s1", b); err != nil {
		t.Fatal(err)
	}
	_, a, err := s.AppendLeased(ctx, lease(0, "node-a", false), 1, hint(1), true)
	if err != nil || a <= b {
		t.Fatalf("node a's first append takes the free lease: token %d (b had %d), %v", a, b, err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "node-b", time.Hour); !isCode(err, events.CodeConflict) {
		t.Fatalf("node b while node a's append holds the lease: %v", err)
	}
	// Node a's lease about to expire: its next append renews it.
	if err := s.RenewLease(ctx, "s1", a, 0); err != nil {
		t.Fatal(err)
	}
	if _, got, err := s.AppendLeased(ctx, lease(a, "node-a", false), 2, hint(2), false); err != nil || got != a {
		t.Fatalf("an append under the lease: token %d, %v", got, err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "node-b", time.Hour); !isCode(err, events.CodeConflict) {
		t.Fatalf("node b after node a's append renewed the lease: %v", err)
	}
	if _, _, err := s.AppendLeased(ctx, lease(a, "node-a", true), 2, hint(3), false); !isCode(err, events.CodeConflict) {
		t.Fatalf("a stale last append: %v", err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "node-b", time.Hour); !isCode(err, events.CodeConflict) {
		t.Fatalf("a refused last append gave the lease up: %v", err)
	}
	if _, got, err := s.AppendLeased(ctx, lease(a, "node-a", true), 3, hint(3), false); err != nil || got != 0 {
		t.Fatalf("the last append: token %d, %v", got, err)
	}
	b, err = s.AcquireLease(ctx, "s1", "node-b", time.Hour)
	if err != nil {
		t.Fatalf("the last append gave the lease up: %v", err)
	}
	if _, _, err := s.AppendLeased(ctx, lease(a, "node-a", false), 4, hint(4), false); !isCode(err, events.CodeConflict) {
		t.Fatalf("node a appends under the lease it gave up: %v", err)
	}
	if err := s.ReleaseLease(ctx, "s1", b); err != nil {
		t.Fatal(err)
	}
	// A run of one append takes and gives up the lease at once.
	if _, got, err := s.AppendLeased(ctx, lease(0, "node-a", true), 4, hint(4), false); err != nil || got != 0 {
		t.Fatalf("a run of one append: token %d, %v", got, err)
	}
	b, err = s.AcquireLease(ctx, "s1", "node-b", time.Hour)
	if err != nil {
		t.Fatalf("after a run of one append: %v", err)
	}
	// An append that does not renew (no TTL) leaves the lease as it was: expiring.
	if err := s.RenewLease(ctx, "s1", b, 0); err != nil {
		t.Fatal(err)
	}
	if _, got, err := s.AppendLeased(ctx, fsm.Lease{Session: "s1", Token: b, Node: "node-b"}, 5, hint(5), false); err != nil || got != b {
		t.Fatalf("an append that does not renew: token %d, %v", got, err)
	}
	if _, err := s.AcquireLease(ctx, "s1", "node-a", time.Hour); err != nil {
		t.Fatalf("an append without a TTL renewed the lease: %v", err)
	}
	for _, bad := range []fsm.Lease{{Session: "s1"}, {Session: "s1", Node: "n"}, {Session: "s1", Token: -1, Node: "n", TTL: time.Hour},
		{Session: "s1", Node: "n", TTL: -time.Second}} {
		if _, _, err := s.AppendLeased(ctx, bad, 6, hint(6), false); !isCode(err, events.CodeInvalid) {
			t.Fatalf("lease %+v: %v", bad, err)
		}
	}
	if evs, _ := s.Events(ctx, "s1", 0); len(evs) != 6 {
		t.Fatalf("the log holds %d events, want 6 (refused appends write nothing)", len(evs))
	}
}
