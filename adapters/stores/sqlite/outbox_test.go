package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// TestClaimInABatchThatRollsBack: a claim that shares a group commit with a request
// that fails after writing runs again when the batch is written again; it still
// hands each delivery out once, with the attempt count the database has.
func TestClaimInABatchThatRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s, err := Open(ctx, filepath.Join(t.TempDir(), "claim.db"), Options{Synchronous: "OFF", Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.RouteWebhooks(func(app, event string) []string { return []string{"crm"} })
	evs := []events.Event{events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "a"}),
		events.MustNew("t1", "", &events.TurnStarted{Input: "hi", Agent: "a"}), events.MustNew("t1", "", &events.TurnCommitted{Agent: "a", Output: "done"})}
	if _, err := s.Append(ctx, "s1", 0, evs); err != nil {
		t.Fatal(err)
	}
	id := projection.DeliveryID("demo", "crm", "s1", 3)
	// Hold the writer so the claim and a failing redelivery share the next batch.
	hold, held := make(chan struct{}), make(chan struct{})
	go s.exclusive(ctx, func(context.Context, *writer) error { close(held); <-hold; return nil })
	<-held
	type claim struct {
		got []projection.Delivery
		err error
	}
	claimed, refused := make(chan claim, 1), make(chan error, 1)
	go func() { got, err := s.ClaimDeliveries(ctx, now, time.Minute, 10); claimed <- claim{got, err} }()
	for s.queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	go func() { _, err := s.Redeliver(ctx, id, now); refused <- err }() // not dead: 409, which rolls the batch back
	for s.queued() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	c := <-claimed
	if err := <-refused; !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("redeliver: %v", err)
	}
	if c.err != nil || len(c.got) != 1 || c.got[0].Attempts != 1 {
		t.Fatalf("claimed %+v (%v): want the delivery once, at attempt 1", c.got, c.err)
	}
}
