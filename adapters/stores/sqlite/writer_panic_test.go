package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
)

// TestAPanicInTheWriterLeavesTheStoreServing: a job that panics while its caller
// leads the writer fails that caller (the panic goes on to it) and the requests it
// took; the next append commits, and Close returns.
func TestAPanicInTheWriterLeavesTheStoreServing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "panic.db"), Options{Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if p := recover(); p == nil {
				t.Fatal("the job's panic did not reach its caller")
			}
		}()
		s.exclusive(ctx, func(context.Context, *writer) error { panic("a job that breaks") })
	}()
	created := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "a"})
	done := make(chan error, 1)
	go func() { _, err := s.Append(ctx, "s1", 0, []events.Event{created}); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the append after the panic: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the append after the panic never committed: the writer is stuck")
	}
	closed := make(chan error, 2)
	for range 2 { // Close twice at once: one closes, both return
		go func() { closed <- s.Close() }()
	}
	for range 2 {
		select {
		case <-closed:
		case <-time.After(30 * time.Second):
			t.Fatal("Close never returned")
		}
	}
}
