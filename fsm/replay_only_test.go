package fsm_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

type countingModel struct {
	fsm.Model
	n *atomic.Int64
}

func (m countingModel) Call(ctx context.Context, req fsm.ModelRequest) (fsm.ModelResponse, error) {
	m.n.Add(1)
	return m.Model.Call(ctx, req)
}

// TestReplayOnlyCompactsNothing: a recording with its compactions removed, replayed on
// a replay-only engine, diverges where a compaction is missing and calls no model for
// it.
func TestReplayOnlyCompactsNothing(t *testing.T) {
	t.Parallel()
	const window, turns = 1500, 20
	var live seenRequests
	store, e, s := longSession(t, window, &live)
	ctx := context.Background()
	for i := 1; i <= turns; i++ {
		if res, err := e.RunTurn(ctx, s.ID, turnInput(i)); err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("turn %d: %+v %v", i, res, err)
		}
	}
	recorded, _ := store.Events(ctx, s.ID, 0)
	var forged []events.Event
	stripped := 0
	for _, ev := range recorded {
		if ev.Type == events.TypeContextCompacted {
			stripped++
			continue
		}
		ev.Seq = int64(len(forged) + 1)
		forged = append(forged, ev)
	}
	if stripped == 0 {
		t.Fatal("no compaction recorded")
	}
	var calls atomic.Int64
	app := longSessionApp(t, window)
	ag := app.Agents["coder"]
	ag.Model = countingModel{ag.Model, &calls}
	rstore, _ := sqlite.MustOpen(t, sqlite.Options{Clock: testClock, Synchronous: "OFF"})
	re, err := fsm.New(rstore, []*fsm.App{app}, fsm.Options{Clock: testClock, NewID: counterIDs("id"), ReplayOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := re.Replay(ctx, forged); !events.IsCode(err, events.CodeNondeterminism) {
		t.Fatalf("replay without its %d compactions: %v, want a divergence", stripped, err)
	}
	if calls.Load() != 0 {
		t.Fatalf("a ReplayOnly engine called the model %d times", calls.Load())
	}
}
