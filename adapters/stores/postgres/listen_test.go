package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
)

// listeningNodes is two nodes (stores of their own) on one database, session s1
// created on a, and b listening.
func listeningNodes(t *testing.T) (a, b *Store, ctx context.Context) {
	t.Helper()
	dsn := TestSchemaDSN(t)
	ctx = context.Background()
	for _, s := range []**Store{&a, &b} {
		opened, err := Open(ctx, dsn, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { opened.Close() }) // a second Close does nothing
		*s = opened
	}
	created := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main"})
	if _, err := a.Append(ctx, "s1", 0, []events.Event{created}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.listening:
	case <-time.After(30 * time.Second):
		t.Fatal("node b never listened")
	}
	return a, b, ctx
}

// TestWatchHearsOtherNodes: a reader following a session on one node wakes when
// another node (a store of its own on the same database) commits to it.
func TestWatchHearsOtherNodes(t *testing.T) {
	t.Parallel()
	a, b, ctx := listeningNodes(t)
	wake, stop := b.Watch("s1") // after the listener's catch-up wake: only a commit wakes it now
	defer stop()
	hint := events.MustNew("", "", &events.LoopDetected{Tool: "x", Repeats: 3, Action: "hint"})
	if _, err := a.Append(ctx, "s1", 1, []events.Event{hint}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("node b never heard node a's commit")
	}
	if evs, err := b.Events(ctx, "s1", 0); err != nil || len(evs) != 2 {
		t.Fatalf("node b woke and reads %d events, %v", len(evs), err)
	}
}

// TestACommitIsHeardThoughItsNodeCloses: a node that closes right after a commit
// still tells the other nodes of it (its notifier sends what waits before it stops).
func TestACommitIsHeardThoughItsNodeCloses(t *testing.T) {
	t.Parallel()
	a, b, ctx := listeningNodes(t)
	wake, stop := b.Watch("s1")
	defer stop()
	hint := events.MustNew("", "", &events.LoopDetected{Tool: "x", Repeats: 3, Action: "hint"})
	if _, err := a.Append(ctx, "s1", 1, []events.Event{hint}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	select {
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("node b never heard the commit node a made as it closed")
	}
}
