package fsm_test

import (
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// handoffApp: triage hands every conversation to billing; billing answers, naming
// the last user message and how many items its request carried.
type handoffApp struct {
	app                   *fsm.App
	triageCalls, billing  *atomic.Int64
	billingSawTransferred *atomic.Bool
}

func newHandoffApp() handoffApp {
	var triageCalls, billingCalls atomic.Int64
	var saw atomic.Bool
	triage := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		triageCalls.Add(1)
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "h1", Name: fsm.HandoffTool("billing"), Arguments: []byte(`{}`)}}}}, nil
	})
	billing := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		billingCalls.Add(1)
		for _, it := range r.Items {
			if it.Type == events.ItemFunctionCallOutput && it.Output == `{"assistant":"billing"}` {
				saw.Store(true)
			}
		}
		last := ""
		for _, it := range r.Items {
			if it.Role == "user" {
				last = it.Content
			}
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "billing on: " + last}}, nil
	})
	app := &fsm.App{Name: "test", StartAgent: "triage", Agents: map[string]*fsm.Agent{
		"triage":  {Name: "triage", LLM: "m", Model: triage, Handoffs: []fsm.Handoff{{Agent: "billing"}}},
		"billing": {Name: "billing", LLM: "m", Model: billing, Handoffs: []fsm.Handoff{{Agent: "triage"}}},
	}}
	return handoffApp{app: app, triageCalls: &triageCalls, billing: &billingCalls, billingSawTransferred: &saw}
}

// TestHandoffCarriesToTheNextTurn: triage hands off to billing in turn 1; turn 2
// starts with billing — also on a new engine over the reopened file, and in a branch
// made after turn 1.
func TestHandoffCarriesToTheNextTurn(t *testing.T) {
	t.Parallel()
	h := newHandoffApp()
	b := setupApp(t, h.app)
	res, sid := b.turn(t, "my invoice is wrong")
	if res.Status != fsm.StatusCompleted || res.Agent != "billing" || res.Output != "billing on: my invoice is wrong" ||
		h.triageCalls.Load() != 1 || h.billing.Load() != 1 || !h.billingSawTransferred.Load() {
		t.Fatalf("turn 1: %+v; triage %d, billing %d calls; billing saw the handoff: %v", res, h.triageCalls.Load(), h.billing.Load(), h.billingSawTransferred.Load())
	}
	evs, _ := b.store.Events(b.ctx, sid, 0)
	var paths []string
	for _, ev := range evs {
		paths = append(paths, ev.Type+"@"+ev.Path)
	}
	if got := strings.Join(paths, " "); !strings.Contains(got, "ModelCalled@triage/model/1 HandoffOccurred@triage/handoff/h1 ModelCalled@billing/model/1 TurnCommitted@") {
		t.Fatalf("events: %s", got)
	}
	if s, _ := b.store.Session(b.ctx, sid); s.ActiveAgent != "billing" {
		t.Fatalf("active agent after turn 1: %s", s.ActiveAgent)
	}
	next := func(e *fsm.Engine, session, input string) {
		t.Helper()
		before := h.triageCalls.Load()
		calls := h.billing.Load()
		res, err := e.RunTurn(b.ctx, session, input)
		if err != nil || res.Status != fsm.StatusCompleted || res.Output != "billing on: "+input || h.triageCalls.Load() != before || h.billing.Load() != calls+1 {
			t.Fatalf("%s: %+v %v; triage %d→%d calls", input, res, err, before, h.triageCalls.Load())
		}
	}
	next(b.engine, sid, "thanks")

	// A branch made after turn 1 starts with billing too.
	turns, _ := b.store.Turns(b.ctx, sid)
	if got := strings.Join(turns[0].Agents, ","); got != "triage,billing" || strings.Join(turns[1].Agents, ",") != "billing" {
		t.Fatalf("the agents the turns passed through: %v, %v", turns[0].Agents, turns[1].Agents)
	}
	branch, err := b.engine.Branch(b.ctx, sid, "alice", fsm.BranchPoint{Turn: turns[0].ID}, nil)
	if err != nil || branch.ActiveAgent != "billing" {
		t.Fatalf("branch: %+v %v", branch, err)
	}
	next(b.engine, branch.ID, "in the branch")

	// A new engine over the reopened file: the active agent is committed state.
	b.store.Close()
	store, err := sqlite.Open(b.ctx, b.path, sqlite.Options{Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e, err := fsm.New(store, []*fsm.App{h.app}, fsm.Options{Clock: testClock, NewID: counterIDs("after")})
	if err != nil {
		t.Fatal(err)
	}
	next(e, sid, "after the restart")
}

// TestHandoffCycle: a hands to b and b back to a within one turn, and a answers; a
// cycle that never answers is stopped by max_turns.
func TestHandoffCycle(t *testing.T) {
	t.Parallel()
	agent := func(name, other string, answers bool, maxTurns int) *fsm.Agent {
		return &fsm.Agent{Name: name, LLM: "m", MaxTurns: maxTurns, Handoffs: []fsm.Handoff{{Agent: other}},
			Model: modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
				if last := r.Items[len(r.Items)-1]; answers && last.Output == `{"assistant":"`+name+`"}` {
					return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: name + " again"}}, nil
				}
				return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
					{ID: "to_" + other + "_" + string(rune('0'+len(r.Items))), Name: fsm.HandoffTool(other), Arguments: []byte(`{}`)}}}}, nil
			})}
	}
	b := setupApp(t, &fsm.App{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{
		"a": agent("a", "b", true, 3), "b": agent("b", "a", false, 3)}})
	res, sid := b.turn(t, "go round")
	if res.Status != fsm.StatusCompleted || res.Agent != "a" || res.Output != "a again" {
		t.Fatalf("a → b → a: %+v", res)
	}
	evs, _ := b.store.Events(b.ctx, sid, 0)
	var handoffs []string
	for _, ev := range evs {
		if ev.Type == events.TypeHandoffOccurred {
			handoffs = append(handoffs, ev.Path)
		}
	}
	if len(handoffs) != 2 || !strings.HasPrefix(handoffs[0], "a/handoff/") || !strings.HasPrefix(handoffs[1], "b/handoff/") {
		t.Fatalf("handoffs: %v", handoffs)
	}
	b.replayFresh(t, sid)

	endless := setupApp(t, &fsm.App{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{
		"a": agent("a", "b", false, 3), "b": agent("b", "a", false, 5)}})
	res, _ = endless.turn(t, "forever")
	if res.Status != fsm.StatusFailed || res.Error.Code != events.CodeMaxTurns || res.Error.Path != "a/model/4" {
		t.Fatalf("endless cycle: %+v %+v", res, res.Error)
	}
}

func TestHandoffValidation(t *testing.T) {
	t.Parallel()
	model := modelFunc(func(fsm.ModelRequest) (fsm.ModelResponse, error) { return fsm.ModelResponse{}, nil })
	for _, tc := range []struct {
		agents  map[string]*fsm.Agent
		mention []string
	}{
		{map[string]*fsm.Agent{"a": {Name: "a", Model: model, Handoffs: []fsm.Handoff{{Agent: "nobody"}}}}, []string{"handoffs[0]", "nobody"}},
		{map[string]*fsm.Agent{"a": {Name: "a", Model: model, Tools: []fsm.Tool{echoTool()}, Handoffs: []fsm.Handoff{{Agent: "b", Tool: "echo"}}},
			"b": {Name: "b", Model: model}}, []string{"handoffs[0]", "handoff to b", "tool echo"}},
		{map[string]*fsm.Agent{"a": {Name: "a", Model: model, Handoffs: []fsm.Handoff{{Agent: "b"}, {Agent: "c", Tool: "transfer_to_b"}}},
			"b": {Name: "b", Model: model}, "c": {Name: "c", Model: model}}, []string{"handoffs[1]", "handoff to c", "handoffs[0] (to b)"}},
		{map[string]*fsm.Agent{"a": {Name: "b", Model: model}}, []string{`"b" is listed as "a"`}},
	} {
		app := &fsm.App{Name: "test", StartAgent: "a", Agents: tc.agents}
		err := app.Validate()
		for _, m := range tc.mention {
			if err == nil || !strings.Contains(err.Error(), m) {
				t.Fatalf("%+v: err = %v, want it to name %s", tc.agents, err, m)
			}
		}
	}
}

// TestGuardrailsFollowTheAgents: the input guardrails are those of the agent that
// starts the turn, the output guardrails those of the agent that answers.
func TestGuardrailsFollowTheAgents(t *testing.T) {
	t.Parallel()
	h := newHandoffApp()
	h.app.Agents["triage"].OutputGuardrails = []fsm.Guardrail{{Name: "never", Kind: fsm.GuardrailRegex, Pattern: regexp.MustCompile(`.`)}}
	h.app.Agents["billing"].InputGuardrails = []fsm.Guardrail{{Name: "never", Kind: fsm.GuardrailRegex, Pattern: regexp.MustCompile(`.`)}}
	h.app.Agents["billing"].OutputGuardrails = []fsm.Guardrail{{Name: "no-invoices", Kind: fsm.GuardrailRegex, Pattern: regexp.MustCompile(`invoice`)}}
	b := setupApp(t, h.app)
	if res, _ := b.turn(t, "my bill is wrong"); res.Status != fsm.StatusCompleted {
		t.Fatalf("triage's input, billing's output, both passing: %+v %+v", res, res.Error)
	}
	res, _ := b.turn(t, "my invoice is wrong")
	if res.Status != fsm.StatusFailed || res.Error.Code != events.CodePolicyDenied || res.Error.Path != "billing/guardrail/output/no-invoices" {
		t.Fatalf("billing's output guardrail: %+v %+v", res, res.Error)
	}
}
