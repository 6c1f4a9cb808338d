package fsm_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// unreadable is a store that cannot read one session's log.
type unreadable struct {
	*sqlite.Store
	session string
}

func (u unreadable) Events(ctx context.Context, session string, after int64) ([]events.Event, error) {
	if session == u.session {
		return nil, errors.New("disk read error")
	}
	return u.Store.Events(ctx, session, after)
}

// TestRecoverGoesOnPastAFailingTurn: a turn that cannot be recovered is reported,
// and the turns after it are recovered all the same.
func TestRecoverGoesOnPastAFailingTurn(t *testing.T) {
	t.Parallel()
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "re: " + r.Items[len(r.Items)-1].Content}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model})
	var ids []string
	for i := 0; i < 3; i++ { // three turns that started and never ended (a crash)
		s, _ := b.engine.CreateSession(b.ctx, "test", "alice", nil)
		if _, err := b.store.Append(b.ctx, s.ID, 1, []events.Event{events.MustNew("t"+s.ID, "", &events.TurnStarted{Input: "hello", Agent: "a"})}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	app, _ := b.engine.App("test")
	e, err := fsm.New(unreadable{b.store, ids[0]}, []*fsm.App{app}, fsm.Options{Clock: testClock, NewID: counterIDs("r")})
	if err != nil {
		t.Fatal(err)
	}
	results, err := e.Recover(b.ctx)
	if err == nil || !strings.Contains(err.Error(), ids[0]) || !strings.Contains(err.Error(), "disk read error") {
		t.Fatalf("the failing turn's error: %v", err)
	}
	if len(results) != 2 {
		t.Fatalf("recovered %d turns, want the 2 that can be", len(results))
	}
	for _, id := range ids[1:] {
		if turn, _ := b.store.LastTurn(b.ctx, id); turn.Status != projection.TurnCompleted {
			t.Fatalf("session %s: turn %s", id, turn.Status)
		}
	}
}

// TestExpiryGoesOnPastAFailingTurn: a suspended turn whose log cannot be read does
// not keep the others' approvals from expiring.
func TestExpiryGoesOnPastAFailingTurn(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int64
	var now atomic.Int64
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return base.Add(time.Duration(now.Load())) }
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: clock, Synchronous: "OFF"})
	tool := &expiring{approval{countingRefund(&refunds)}, 10 * time.Minute}
	app := &fsm.App{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": {Name: "a", LLM: "m", Model: refundingModel(1), Tools: []fsm.Tool{tool}}}}
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: clock, NewID: counterIDs("x")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	for i := 0; i < 3; i++ {
		s, _ := e.CreateSession(ctx, "test", "alice", nil)
		if res, err := e.RunTurn(ctx, s.ID, "refund"); err != nil || res.Status != fsm.StatusSuspended {
			t.Fatalf("%+v %v", res, err)
		}
		ids = append(ids, s.ID)
	}
	now.Store(int64(10 * time.Minute))
	expirer, err := fsm.New(unreadable{store, ids[1]}, []*fsm.App{app}, fsm.Options{Clock: clock, NewID: counterIDs("y")})
	if err != nil {
		t.Fatal(err)
	}
	done, err := expirer.ExpireDue(ctx)
	if err == nil || !strings.Contains(err.Error(), ids[1]) {
		t.Fatalf("the failing turn's error: %v", err)
	}
	if len(done) != 2 {
		t.Fatalf("expired %d turns, want the 2 that can be", len(done))
	}
	for i, id := range ids {
		turn, _ := store.LastTurn(ctx, id)
		if want := map[bool]projection.TurnStatus{true: projection.TurnSuspended, false: projection.TurnCompleted}[i == 1]; turn.Status != want {
			t.Fatalf("session %s: turn %s, want %s", id, turn.Status, want)
		}
	}
}
