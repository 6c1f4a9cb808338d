package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
)

// world is an engine on a store under test, with an app whose scripted model looks
// up, refunds (after a person approves) and waits on a gate, as the input says.
type world struct {
	t       *testing.T
	s       Store
	e       *fsm.Engine
	ctx     context.Context
	gate    chan struct{} // closing it lets the slow tool's calls return
	entered chan struct{} // the slow tool says it runs
}

type noArgs struct{}

// Approval makes a tool wait for a person's answer before it runs.
type Approval struct{ fsm.Tool }

// Spec is the tool's, with NeedsApproval.
func (a Approval) Spec() fsm.ToolSpec {
	s := a.Tool.Spec()
	s.NeedsApproval = true
	return s
}

var worlds atomic.Int64

func newWorld(t *testing.T, h Harness) *world {
	t.Helper()
	w := &world{t: t, s: h.Open(t), ctx: context.Background(), gate: make(chan struct{}), entered: make(chan struct{}, 8)}
	model, err := scripted.New([]scripted.Rule{
		{When: scripted.When{AfterTool: "refund"}, Reply: "refunded"},
		{When: scripted.When{AfterTool: "*"}, Reply: "found {{output}}"},
		{When: scripted.When{Input: "^look"}, Tools: []scripted.ToolCall{{Name: "lookup", Arguments: `{}`}}},
		{When: scripted.When{Input: "^refund"}, Tools: []scripted.ToolCall{{Name: "refund", Arguments: `{}`}}},
		{When: scripted.When{Input: "^slow"}, Tools: []scripted.ToolCall{{Name: "slow", Arguments: `{}`}}},
		{When: scripted.When{Input: "^hello"}, Reply: "hi"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tools := []fsm.Tool{
		functool.MustNew("lookup", "looks it up", func(context.Context, noArgs) (any, error) { return "order 42 shipped", nil }),
		Approval{functool.MustNew("refund", "refunds", func(context.Context, noArgs) (any, error) { return "ok", nil })},
		functool.MustNew("slow", "waits for the test", func(ctx context.Context, _ noArgs) (any, error) {
			w.entered <- struct{}{}
			select {
			case <-w.gate:
			case <-ctx.Done():
			}
			return "slow done", nil
		}),
	}
	app := &fsm.App{Name: "demo", StartAgent: "main", OnBusy: fsm.OnBusyEnqueue,
		Agents: map[string]*fsm.Agent{"main": {Name: "main", LLM: "scripted", Model: model, Tools: tools, MaxTurns: 4, MaxToolCalls: 4}}}
	prefix := worlds.Add(1)
	var n atomic.Int64
	e, err := fsm.New(w.s, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: func() string { return fmt.Sprintf("w%d-%06d", prefix, n.Add(1)) }, Cluster: h.cluster(w.s)})
	if err != nil {
		t.Fatal(err)
	}
	w.e = e
	return w
}

func (w *world) session(owner string) string {
	w.t.Helper()
	s, err := w.e.CreateSession(w.ctx, "demo", owner, []byte(`{"from":"storetest"}`))
	if err != nil {
		w.t.Fatal(err)
	}
	return s.ID
}

func (w *world) run(session, input string) *fsm.Result {
	w.t.Helper()
	st, err := w.e.StartTurn(w.ctx, session, input)
	if err != nil {
		w.t.Fatalf("start %q: %v", input, err)
	}
	res, err := st.Wait()
	if err != nil {
		w.t.Fatalf("turn %q: %v", input, err)
	}
	return res
}

// settled waits until session's last turn no longer holds it in the engine.
func (w *world) settled(session string) {
	w.t.Helper()
	last, err := w.s.LastTurn(w.ctx, session)
	if err != nil {
		w.t.Fatal(err)
	}
	seq, _ := w.s.LastSeq(w.ctx, session)
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	if err := w.e.Settled(ctx, session, last.ID, seq); err != nil {
		w.t.Fatal(err)
	}
}
