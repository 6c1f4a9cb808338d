package fsm_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// slowAgent answers "slow" by calling a tool that holds until release, anything else
// at once.
func slowAgent(entered chan<- struct{}, release <-chan struct{}) *fsm.Agent {
	hold := functool.MustNew("hold", "holds", func(context.Context, noArgs) (any, error) {
		entered <- struct{}{}
		<-release
		return "released", nil
	})
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		last := r.Items[len(r.Items)-1]
		switch {
		case last.Type == events.ItemFunctionCallOutput:
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done slow"}}, nil
		case last.Content == "slow":
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: "h1", Name: "hold", Arguments: json.RawMessage(`{}`)}}}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "echo: " + last.Content}}, nil
	})
	return &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{hold}}
}

// settled waits until a session has n turns and none runs, and returns them.
func settled(t *testing.T, store *sqlite.Store, session string, n int) []projection.Turn {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		turns, err := store.Turns(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		done := len(turns) == n
		for _, tr := range turns {
			done = done && tr.Status != projection.TurnRunning
		}
		if done {
			return turns
		}
		if time.Now().After(deadline) {
			t.Fatalf("turns: %+v", turns)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestQueueRunsInOrder: inputs that arrive while a turn runs wait in the queue — in
// the log, at their positions — and run as the turns they were promised, in order.
func TestQueueRunsInOrder(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	b := setup(t, slowAgent(entered, release))
	s, _ := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	if _, err := b.engine.StartTurn(b.ctx, s.ID, "slow"); err != nil {
		t.Fatal(err)
	}
	<-entered
	one, err := b.engine.Enqueue(b.ctx, s.ID, "alice", "one", false)
	if err != nil {
		t.Fatal(err)
	}
	two, _ := b.engine.Enqueue(b.ctx, s.ID, "alice", "two", false)
	if one.Position != 1 || two.Position != 2 {
		t.Fatalf("positions %d %d", one.Position, two.Position)
	}
	if q, _ := b.engine.Queue(b.ctx, s.ID); len(q) != 2 || q[0].Input != "one" {
		t.Fatalf("queue %+v", q)
	}
	close(release)
	turns := settled(t, b.store, s.ID, 3)
	var got []string
	for _, tr := range turns {
		got = append(got, tr.Input+"/"+string(tr.Status))
	}
	if strings.Join(got, ",") != "slow/completed,one/completed,two/completed" || turns[1].ID != one.TurnID || turns[2].ID != two.TurnID {
		t.Fatalf("turns %v (%s %s)", got, turns[1].ID, turns[2].ID)
	}
	if q, _ := b.engine.Queue(b.ctx, s.ID); len(q) != 0 {
		t.Fatalf("queue after %+v", q)
	}
	b.replayFresh(t, s.ID)
}

// TestInterruptStopsAtTheNextSafePoint: an input that interrupts lets the running tool
// finish — it is recorded as it ended, nothing becomes outcome-unknown —, then the
// turn is canceled with the reason and the input runs.
func TestInterruptStopsAtTheNextSafePoint(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	b := setup(t, slowAgent(entered, release))
	s, _ := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	if _, err := b.engine.StartTurn(b.ctx, s.ID, "slow"); err != nil {
		t.Fatal(err)
	}
	<-entered
	if _, err := b.engine.Enqueue(b.ctx, s.ID, "alice", "urgent", true); err != nil {
		t.Fatal(err)
	}
	close(release)
	turns := settled(t, b.store, s.ID, 2)
	if turns[0].Status != projection.TurnCanceled || turns[0].ErrorMessage != fsm.InterruptReason || turns[1].Input != "urgent" || turns[1].Status != projection.TurnCompleted {
		t.Fatalf("turns %+v", turns)
	}
	evs, _ := b.store.Events(b.ctx, s.ID, 0)
	for _, ev := range evs {
		if ev.Type == events.TypeToolResulted {
			if tr, _ := events.DecodeAs[*events.ToolResulted](ev); tr.IsError {
				t.Fatalf("the running tool was stopped: %+v", tr)
			}
			return
		}
	}
	t.Fatal("the running tool's result was not recorded")
}

// TestQueueSurvivesARestart: an input queued behind a turn that waits for a person is
// in the database: a new engine on the same file runs it once the turn is answered.
func TestQueueSurvivesARestart(t *testing.T) {
	t.Parallel()
	b := setupApproval(t)
	res, sid := b.suspended(t)
	q, err := b.engine.Enqueue(b.ctx, sid, "alice", "and then?", false)
	if err != nil || q.Position != 1 {
		t.Fatalf("enqueue: %+v %v", q, err)
	}
	b.store.Close()
	store, err := sqlite.Open(b.ctx, b.path, sqlite.Options{Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	app, _ := b.engine.App("test")
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: testClock, NewID: counterIDs("r")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Recover(b.ctx); err != nil {
		t.Fatal(err)
	}
	if waiting, _ := e.Queue(b.ctx, sid); len(waiting) != 1 || waiting[0].Turn != q.TurnID {
		t.Fatalf("after the restart the queue is %+v", waiting)
	}
	st, err := e.Resume(b.ctx, sid, "reviewer", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: yes()}})
	if err != nil {
		t.Fatal(err)
	}
	st.Wait()
	turns := settled(t, store, sid, 2)
	// the queued input ran as its turn (this agent asks for approval again: it waits)
	if turns[1].ID != q.TurnID || turns[1].Input != "and then?" || turns[1].Status != projection.TurnSuspended {
		t.Fatalf("turns %+v", turns)
	}
}

// staleSeq is a store whose next LastSeq answers one seq behind, as if a running
// turn appended between reading it and appending after it.
type staleSeq struct {
	*sqlite.Store
	stale atomic.Bool
}

func (s *staleSeq) LastSeq(ctx context.Context, session string) (int64, error) {
	n, err := s.Store.LastSeq(ctx, session)
	if s.stale.CompareAndSwap(true, false) {
		n--
	}
	return n, err
}

// echoEngine is an engine on store of one app ("test") whose agent echoes its input.
func echoEngine(t *testing.T, store fsm.Store) *fsm.Engine {
	t.Helper()
	agent := &fsm.Agent{Name: "a", LLM: "m", Model: modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "echo: " + r.Items[len(r.Items)-1].Content}}, nil
	})}
	e, err := fsm.New(store, []*fsm.App{{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": agent}}}, fsm.Options{Clock: testClock, NewID: counterIDs("id")})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestEnqueueWhileTheTurnAppends: input queued while the running turn appends its
// own events is queued all the same (a queue event belongs to no turn), and so is
// its cancellation.
func TestEnqueueWhileTheTurnAppends(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: testClock, Synchronous: "OFF"})
	stale := &staleSeq{Store: store}
	e := echoEngine(t, stale)
	ctx := context.Background()
	s, err := e.CreateSession(ctx, "test", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := e.StartTurn(ctx, s.ID, "first")
	st.Wait()
	stale.stale.Store(true)
	q, err := e.Enqueue(ctx, s.ID, "alice", "then this", false)
	if err != nil || q.TurnID == "" {
		t.Fatalf("enqueue after a stale seq: %+v %v", q, err)
	}
}
