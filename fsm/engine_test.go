package fsm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// modelFunc adapts a function to fsm.Model.
type modelFunc func(fsm.ModelRequest) (fsm.ModelResponse, error)

func (f modelFunc) Call(_ context.Context, r fsm.ModelRequest) (fsm.ModelResponse, error) {
	return f(r)
}

type testBundle struct {
	ctx    context.Context
	store  *sqlite.Store
	engine *fsm.Engine
	path   string // the database file
}

func counterIDs(prefix string) events.IDFunc {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("%s%04d", prefix, n.Add(1)) }
}

func setup(t *testing.T, agent *fsm.Agent) testBundle {
	t.Helper()
	return setupPolicy(t, agent, nil)
}

// setupPolicy is setup with a guardrail policy on the app.
func setupPolicy(t *testing.T, agent *fsm.Agent, policy *fsm.GuardrailPolicy) testBundle {
	t.Helper()
	return setupApp(t, &fsm.App{Name: "test", StartAgent: agent.Name, Agents: map[string]*fsm.Agent{agent.Name: agent}, GuardrailPolicy: policy})
}

// setupApp serves one app, named "test", on a fresh store.
func setupApp(t *testing.T, app *fsm.App) testBundle {
	t.Helper()
	store, path := sqlite.MustOpen(t, sqlite.Options{Clock: testClock, Synchronous: "OFF"})
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: testClock, NewID: counterIDs("id")})
	if err != nil {
		t.Fatal(err)
	}
	return testBundle{ctx: context.Background(), store: store, engine: e, path: path}
}

func testClock() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func (b testBundle) turn(t *testing.T, input string) (*fsm.Result, string) {
	t.Helper()
	s, err := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.engine.RunTurn(b.ctx, s.ID, input)
	if err != nil {
		t.Fatal(err)
	}
	return res, s.ID
}

// replayFresh replays a session's recorded events on a new engine over an empty store.
func (b testBundle) replayFresh(t *testing.T, session string) {
	t.Helper()
	recorded, err := b.store.Events(b.ctx, session, 0)
	if err != nil {
		t.Fatal(err)
	}
	replayStore, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	app, _ := b.engine.App("test")
	e, err := fsm.New(replayStore, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: counterIDs("r")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Replay(b.ctx, recorded); err != nil {
		t.Fatalf("replay: %v", err)
	}
}

func lastOutputs(items []events.Item) []string {
	var outs []string
	for i := len(items) - 1; i >= 0 && items[i].Type == events.ItemFunctionCallOutput; i-- {
		outs = append([]string{items[i].Output}, outs...)
	}
	return outs
}

type delayArgs struct {
	Name    string `json:"name"`
	DelayMS int    `json:"delay_ms"`
}

func TestParallelToolsRunConcurrentlyAndKeepCallOrder(t *testing.T) {
	t.Parallel()
	var (
		mu           sync.Mutex
		starts, ends []time.Time
		started      = make(chan struct{}, 3)
		allStarted   = make(chan struct{})
		once         sync.Once
		startedCount atomic.Int32
	)
	delay := functool.MustNew("delay", "sleeps", func(ctx context.Context, a delayArgs) (any, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		started <- struct{}{}
		if startedCount.Add(1) == 3 {
			once.Do(func() { close(allStarted) })
		}
		// A barrier no sequential runner could pass: every call waits for all three.
		select {
		case <-allStarted:
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("tools did not run concurrently")
		}
		time.Sleep(time.Duration(a.DelayMS) * time.Millisecond)
		mu.Lock()
		ends = append(ends, time.Now())
		mu.Unlock()
		return map[string]string{"name": a.Name}, nil
	})
	var seen []string
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			seen = outs
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done"}}, nil
		}
		var calls []events.ToolCall
		for i, d := range []int{300, 100, 200} {
			calls = append(calls, events.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "delay",
				Arguments: json.RawMessage(fmt.Sprintf(`{"name":"t%d","delay_ms":%d}`, i, d))})
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: calls}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{delay}})
	res, _ := b.turn(t, "go")
	if res.Status != fsm.StatusCompleted {
		t.Fatalf("status = %s (%+v)", res.Status, res.Error)
	}
	first, last := starts[0], ends[0]
	for _, s := range starts {
		if s.Before(first) {
			first = s
		}
	}
	for _, e := range ends {
		if e.After(last) {
			last = e
		}
	}
	if total, sum := last.Sub(first), 600*time.Millisecond; total >= sum {
		t.Fatalf("tools took %s in all, not below the %s sum of their delays", total, sum)
	}
	want := []string{`{"name":"t0"}`, `{"name":"t1"}`, `{"name":"t2"}`}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("outputs reached the model as %v, want call order %v", seen, want)
	}
}

type noArgs struct{}

func TestToolErrorIsReportedToModelAndTurnContinues(t *testing.T) {
	t.Parallel()
	boom := functool.MustNew("boom", "fails", func(context.Context, noArgs) (any, error) {
		return nil, fmt.Errorf("disk on fire")
	})
	panicky := functool.MustNew("panicky", "panics", func(context.Context, noArgs) (any, error) { panic("oops") })
	var seen []string
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			seen = outs
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "sorry"}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "c1", Name: "boom", Arguments: json.RawMessage(`{}`)},
			{ID: "c2", Name: "panicky", Arguments: json.RawMessage(`{}`)},
			{ID: "c3", Name: "boom", Arguments: json.RawMessage(`{"x":1}`)},
			{ID: "c4", Name: "nope", Arguments: json.RawMessage(`{}`)},
		}}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{boom, panicky}})
	res, _ := b.turn(t, "go")
	if res.Status != fsm.StatusCompleted || res.Output != "sorry" {
		t.Fatalf("result = %+v", res)
	}
	want := []string{
		`{"error":{"kind":"failed","message":"the tool failed"}}`,
		`{"error":{"kind":"panicked","message":"the tool crashed"}}`,
		`{"error":{"kind":"invalid_arguments","message":"x: additional properties 'x' not allowed"}}`,
		`{"error":{"kind":"unknown_tool","message":"no tool named nope"}}`,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("model saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

func TestToolTimeoutIsAToolError(t *testing.T) {
	t.Parallel()
	slow := functool.MustNew("slow", "waits for its context", func(ctx context.Context, _ noArgs) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tool := &timeoutTool{Tool: slow, timeout: 20 * time.Millisecond}
	var seen []string
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			seen = outs
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "ok"}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: "c1", Name: "slow", Arguments: json.RawMessage(`{}`)}}}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{tool}})
	res, _ := b.turn(t, "go")
	if res.Status != fsm.StatusCompleted || len(seen) != 1 || !strings.Contains(seen[0], `"kind":"timeout"`) {
		t.Fatalf("result = %+v, model saw %v", res, seen)
	}
}

type timeoutTool struct {
	fsm.Tool
	timeout time.Duration
}

func (t *timeoutTool) Spec() fsm.ToolSpec {
	s := t.Tool.Spec()
	s.Timeout = t.timeout
	return s
}

func loopingModel(args func(n int) string) fsm.Model {
	var n atomic.Int64
	return modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		i := int(n.Add(1))
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: json.RawMessage(args(i))}}}}, nil
	})
}

type echoArgs struct {
	N int `json:"n"`
}

func echoTool() fsm.Tool {
	return functool.MustNew("echo", "echoes", func(_ context.Context, a echoArgs) (any, error) { return a, nil })
}

func TestLimitsFailTheTurnWithTypedCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		agent *fsm.Agent
		code  events.Code
	}{
		{"max_turns", &fsm.Agent{Name: "a", LLM: "m", MaxTurns: 3, MaxToolCalls: 100,
			Model: loopingModel(func(n int) string { return fmt.Sprintf(`{"n":%d}`, n) })}, events.CodeMaxTurns},
		{"tool cap", &fsm.Agent{Name: "a", LLM: "m", MaxTurns: 100, MaxToolCalls: 4,
			Model: loopingModel(func(n int) string { return fmt.Sprintf(`{"n":%d}`, n) })}, events.CodeToolCallCap},
		{"loop", &fsm.Agent{Name: "a", LLM: "m", MaxTurns: 100, MaxToolCalls: 100,
			Model: loopingModel(func(int) string { return `{"n":1}` })}, events.CodeLoopDetected},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.agent.Tools = []fsm.Tool{echoTool()}
			b := setup(t, tc.agent)
			res, sid := b.turn(t, "go")
			if res.Status != fsm.StatusFailed || res.Error.Code != tc.code {
				t.Fatalf("result = %+v %+v, want failed with %s", res, res.Error, tc.code)
			}
			hist, err := b.store.History(b.ctx, sid)
			if err != nil || len(hist) != 0 {
				t.Fatalf("a failed turn committed %d items (%v)", len(hist), err)
			}
		})
	}
}

func TestLoopHintReachesTheModel(t *testing.T) {
	t.Parallel()
	var hinted atomic.Bool
	var n atomic.Int64
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		last := r.Items[len(r.Items)-1]
		if last.Role == "system" && strings.Contains(last.Content, "same arguments 3 times") {
			hinted.Store(true)
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "giving up"}}, nil
		}
		i := n.Add(1)
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: json.RawMessage(`{"n":1}`)}}}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{echoTool()}})
	res, sid := b.turn(t, "go")
	if res.Status != fsm.StatusCompleted || !hinted.Load() {
		t.Fatalf("result = %+v, hinted = %v", res, hinted.Load())
	}
	evs, _ := b.store.Events(b.ctx, sid, 0)
	found := false
	for _, ev := range evs {
		found = found || ev.Type == events.TypeLoopDetected
	}
	if !found {
		t.Fatal("no LoopDetected event recorded")
	}
}

func TestConversationCarriesAcrossTurns(t *testing.T) {
	t.Parallel()
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: fmt.Sprintf("seen %d items", len(r.Items))}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model})
	_, sid := b.turn(t, "one")
	res, err := b.engine.RunTurn(b.ctx, sid, "two")
	if err != nil || res.Output != "seen 3 items" {
		t.Fatalf("second turn = %+v, %v", res, err)
	}
	if _, err := b.engine.RunTurn(b.ctx, sid, "  "); !events.IsCode(err, events.CodeInvalid) {
		t.Fatalf("empty input: err = %v, want invalid", err)
	}
	if _, err := b.engine.RunTurn(b.ctx, "nope", "hi"); !events.IsCode(err, events.CodeNotFound) {
		t.Fatalf("unknown session: err = %v, want not_found", err)
	}
}

func TestTransitionTableRefusesIllegalMoves(t *testing.T) {
	t.Parallel()
	m := fsm.NewMachine(fsm.StateStarted)
	err := m.Fire(fsm.TriggerCommit)
	if err == nil || !strings.Contains(err.Error(), "commit is not allowed in state started") {
		t.Fatalf("err = %v", err)
	}
	for _, tr := range []fsm.Trigger{fsm.TriggerGuardInput, fsm.TriggerCallModel, fsm.TriggerRunTools, fsm.TriggerCallModel,
		fsm.TriggerGuardOutput, fsm.TriggerCommit} {
		if err := m.Fire(tr); err != nil {
			t.Fatalf("%s: %v", tr, err)
		}
	}
	if m.State() != fsm.StateCommitted {
		t.Fatalf("state = %s", m.State())
	}
	if err := m.Fire(fsm.TriggerFail); err == nil {
		t.Fatal("a committed turn accepted fail")
	}
}
