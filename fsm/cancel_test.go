package fsm_test

import (
	"context"
	"testing"

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
	if res.Status != fsm.StatusFailed || res.Error.Code != events.CodeCanceled {
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
