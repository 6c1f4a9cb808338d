package fsm_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// blockingModel answers "hi" at once, and blocks on "wait" until its call is cancelled.
type blockingModel struct{ entered chan struct{} }

func (m blockingModel) Call(ctx context.Context, r fsm.ModelRequest) (fsm.ModelResponse, error) {
	if r.Items[len(r.Items)-1].Content == "wait" {
		m.entered <- struct{}{}
		<-ctx.Done()
		return fsm.ModelResponse{}, ctx.Err()
	}
	return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "hello"}}, nil
}

func TestCancelARunningTurn(t *testing.T) {
	t.Parallel()
	m := blockingModel{entered: make(chan struct{}, 1)}
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: m})
	first, sid := b.turn(t, "hi")
	done := make(chan *fsm.Result, 1)
	go func() {
		res, err := b.engine.RunTurn(b.ctx, sid, "wait")
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-m.entered
	running, _ := b.store.RunningTurns(b.ctx)
	if len(running) != 1 {
		t.Fatalf("running turns = %v", running)
	}
	turn, err := b.engine.Cancel(b.ctx, sid, running[0].ID, "")
	if err != nil || turn.Status != projection.TurnCanceled || turn.ErrorCode != events.CodeCanceled {
		t.Fatalf("cancel: %+v %v", turn, err)
	}
	res := <-done
	if res.Status != fsm.StatusCanceled || res.Error.Code != events.CodeCanceled {
		t.Fatalf("canceled run result = %+v %+v", res, res.Error)
	}
	if h, _ := b.store.History(b.ctx, sid); len(h) != 2 {
		t.Fatalf("a canceled turn committed items: %v", h)
	}
	if _, err := b.engine.Cancel(b.ctx, sid, first.TurnID, ""); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("cancel of a committed turn: err = %v, want conflict", err)
	}
	if _, err := b.engine.Cancel(b.ctx, sid, "nope", ""); !events.IsCode(err, events.CodeNotFound) {
		t.Fatalf("cancel of an unknown turn: err = %v, want not_found", err)
	}
	// The session goes on after a cancel.
	if res, err := b.engine.RunTurn(b.ctx, sid, "hi"); err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("turn after cancel: %+v %v", res, err)
	}
}

func TestCancelATurnLeftRunningByACrash(t *testing.T) {
	t.Parallel()
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: blockingModel{}})
	s, err := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := events.MustNew("t-crashed", "", &events.TurnStarted{Input: "hi", Agent: "a"})
	if _, err := b.store.Append(b.ctx, s.ID, 1, []events.Event{start}); err != nil {
		t.Fatal(err)
	}
	turn, err := b.engine.Cancel(b.ctx, s.ID, "t-crashed", "operator gave up")
	if err != nil || turn.Status != projection.TurnCanceled || turn.ErrorMessage != "operator gave up" {
		t.Fatalf("cancel = %+v, %v", turn, err)
	}
}

// TestCancelReachesRunningTools: a cancel ends the context of every tool running in
// the turn. A tool that honours it is recorded as canceled; one that ignores it is
// waited for CancelGrace, then recorded as abandoned — the turn ends without it. The
// caller's reason is what TurnCanceled and the turn's error carry.
func TestCancelReachesRunningTools(t *testing.T) {
	t.Parallel()
	entered := make(chan string, 2)
	stubbornRelease := make(chan struct{})
	defer close(stubbornRelease)
	polite := functool.MustNew("polite", "stops when told", func(ctx context.Context, _ noArgs) (any, error) {
		entered <- "polite"
		<-ctx.Done()
		return nil, ctx.Err()
	})
	stubborn := functool.MustNew("stubborn", "ignores its context", func(context.Context, noArgs) (any, error) {
		entered <- "stubborn"
		<-stubbornRelease // only the test's end lets it go
		return "late", nil
	})
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "c1", Name: "polite", Arguments: json.RawMessage(`{}`)},
			{ID: "c2", Name: "stubborn", Arguments: json.RawMessage(`{}`)},
		}}}, nil
	})
	agent := &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{polite, stubborn}}
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: testClock, Synchronous: "OFF"})
	e, err := fsm.New(store, []*fsm.App{{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": agent}}},
		fsm.Options{Clock: testClock, NewID: counterIDs("id"), CancelGrace: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _ := e.CreateSession(ctx, "test", "alice", nil)
	done := make(chan *fsm.Result, 1)
	go func() {
		res, err := e.RunTurn(ctx, s.ID, "go")
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-entered
	<-entered
	running, _ := store.RunningTurns(ctx)
	turn, err := e.Cancel(ctx, s.ID, running[0].ID, "the customer hung up")
	if err != nil || turn.Status != projection.TurnCanceled || turn.ErrorMessage != "the customer hung up" {
		t.Fatalf("cancel = %+v, %v", turn, err)
	}
	select {
	case <-stubbornRelease:
		t.Fatal("unreachable")
	default: // the stubborn tool is still running: the cancel did not wait for it
	}
	res := <-done
	if res.Error == nil || res.Error.Code != events.CodeCanceled || res.Error.Message != "the customer hung up" {
		t.Fatalf("result = %+v", res)
	}
	evs, _ := store.Events(ctx, s.ID, 0)
	kinds := map[string]string{}
	var order []string
	for _, ev := range evs {
		order = append(order, string(ev.Type))
		if ev.Type == events.TypeToolResulted {
			tr, _ := events.DecodeAs[*events.ToolResulted](ev)
			kinds[tr.Tool] = tr.ErrorKind
		}
	}
	if kinds["polite"] != fsm.ToolErrCanceled || kinds["stubborn"] != fsm.ToolErrAbandoned {
		t.Fatalf("tool results = %v", kinds)
	}
	if last := order[len(order)-1]; last != string(events.TypeTurnCanceled) {
		t.Fatalf("log = %v: TurnCanceled is not last", order)
	}
}

// TestCancelWhileTurnsStart calls Cancel while turns start on the same session: the
// running turn's id is read under the engine's lock (run with -race).
func TestCancelWhileTurnsStart(t *testing.T) {
	t.Parallel()
	m := blockingModel{entered: make(chan struct{}, 1)}
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: m})
	_, sid := b.turn(t, "hi")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				b.engine.Cancel(b.ctx, sid, "not-this-turn", "")
			}
		}
	}()
	for i := 0; i < 20; i++ {
		if _, err := b.engine.RunTurn(b.ctx, sid, "hi"); err != nil && !events.IsCode(err, events.CodeConflict) {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestCancelWhileAnAgentToolRuns: a cancel that lands while a nested agent's model
// call runs ends the turn as canceled, with the caller's reason — not as a failed
// agent tool.
func TestCancelWhileAnAgentToolRuns(t *testing.T) {
	t.Parallel()
	nested := blockingModel{entered: make(chan struct{}, 1)}
	caller := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "r1", Name: "research", Arguments: json.RawMessage(`{"input":"wait"}`)}}}}, nil
	})
	b := setupApp(t, &fsm.App{Name: "test", StartAgent: "lead", Agents: map[string]*fsm.Agent{
		"lead":       {Name: "lead", LLM: "m", Model: caller, AgentTools: []fsm.AgentTool{{Agent: "researcher", Name: "research"}}},
		"researcher": {Name: "researcher", LLM: "m", Model: nested},
	}})
	s, _ := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	done := make(chan *fsm.Result, 1)
	go func() {
		res, _ := b.engine.RunTurn(b.ctx, s.ID, "go")
		done <- res
	}()
	<-nested.entered
	running, _ := b.store.RunningTurns(b.ctx)
	turn, err := b.engine.Cancel(b.ctx, s.ID, running[0].ID, "out of time")
	if err != nil || turn.Status != projection.TurnCanceled || turn.ErrorMessage != "out of time" {
		t.Fatalf("cancel = %+v, %v", turn, err)
	}
	if res := <-done; res.Error == nil || res.Error.Code != events.CodeCanceled || res.Error.Message != "out of time" {
		t.Fatalf("result = %+v", res.Error)
	}
}
