package fsm_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// TestCancelingATurnACrashLeftCountsItsCalls: a turn a crash left running, whose
// counts were only in the dead process's memory, is canceled without being recovered:
// its row and its TurnCanceled carry the model calls and tokens the log holds.
func TestCancelingATurnACrashLeftCountsItsCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	stopped := func() time.Time { return time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC) } // nothing ages in memory
	store, err := sqlite.Open(ctx, live, sqlite.Options{Clock: stopped})
	if err != nil {
		t.Fatal(err)
	}
	evs := []events.Event{events.MustNew("", "", &events.SessionCreated{App: "test", Owner: "alice", Agent: "a"}),
		events.MustNew("t1", "", &events.TurnStarted{Input: "go", Agent: "a"})}
	for i := 1; i <= 2; i++ {
		evs = append(evs, events.MustNew("t1", "a/model/"+string(rune('0'+i)), &events.ModelCalled{Agent: "a", LLM: "m", RequestHash: "h",
			Response: events.ModelResponse{Text: "thinking"}, Usage: events.Usage{InputTokens: 10, OutputTokens: 2}}))
	}
	for i, ev := range evs { // one commit each, as a running turn makes them
		if _, err := store.Append(ctx, "s1", int64(i), []events.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	crashed := filepath.Join(dir, "crashed.db")
	sqlite.CopyAsACrashLeavesIt(t, live, crashed)
	store.Close()

	after, err := sqlite.Open(ctx, crashed, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if tr, _ := after.Turn(ctx, "s1", "t1"); tr.ModelCalls != 0 {
		t.Fatalf("the crash image's row has %d model calls: the case is not the one under test", tr.ModelCalls)
	}
	agent := &fsm.Agent{Name: "a", LLM: "m", Model: modelFunc(func(fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{}, nil
	})}
	e, err := fsm.New(after, []*fsm.App{{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": agent}}}, fsm.Options{Clock: time.Now, NewID: counterIDs("c")})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := e.Cancel(ctx, "s1", "t1", "the operator stopped it")
	if err != nil || tr.Status != projection.TurnCanceled || tr.ModelCalls != 2 || tr.Usage.InputTokens != 20 {
		t.Fatalf("canceled: %+v (%v)", tr, err)
	}
	log, err := after.Events(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := events.DecodeAs[*events.TurnCanceled](log[len(log)-1])
	if err != nil || tc.Usage.InputTokens != 20 || tc.Usage.OutputTokens != 4 {
		t.Fatalf("TurnCanceled: %+v (%v)", tc, err)
	}
}
