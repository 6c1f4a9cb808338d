package fsm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// researchApp: lead asks its research tool (the researcher agent) about two topics in
// one response, then answers with what came back. The researcher echoes its topic
// calls a tool once, then answers "notes on <topic>".
type researchApp struct {
	app      *fsm.App
	mu       sync.Mutex
	lead     []fsm.ModelRequest
	research []fsm.ModelRequest
}

func newResearchApp(researcherMaxTurns int) *researchApp {
	ra := &researchApp{}
	lead := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		ra.mu.Lock()
		ra.lead = append(ra.lead, r)
		ra.mu.Unlock()
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: strings.Join(outs, " | ")}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "r1", Name: "research", Arguments: json.RawMessage(`{"input":"topic A"}`)},
			{ID: "r2", Name: "research", Arguments: json.RawMessage(`{"input":"topic B"}`)},
		}}}, nil
	})
	researcher := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		ra.mu.Lock()
		ra.research = append(ra.research, r)
		ra.mu.Unlock()
		topic := r.Items[0].Content
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "notes on " + topic}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: fmt.Sprintf("e%d", len(r.Items)), Name: "echo", Arguments: json.RawMessage(`{"n":1}`)}}}}, nil
	})
	ra.app = &fsm.App{Name: "test", StartAgent: "lead", Agents: map[string]*fsm.Agent{
		"lead":       {Name: "lead", LLM: "m", Model: lead, AgentTools: []fsm.AgentTool{{Agent: "researcher", Name: "research"}}},
		"researcher": {Name: "researcher", LLM: "m", Model: researcher, Tools: []fsm.Tool{echoTool()}, MaxTurns: researcherMaxTurns},
	}}
	return ra
}

// TestAgentToolsRunUnderTheirOwnPaths: two calls of one agent tool in one response run
// as two nested runs under their call paths, each recorded there; the caller gets only
// the two answers, in call order; the session replays.
func TestAgentToolsRunUnderTheirOwnPaths(t *testing.T) {
	t.Parallel()
	ra := newResearchApp(0)
	b := setupApp(t, ra.app)
	res, sid := b.turn(t, "compare A and B")
	if res.Status != fsm.StatusCompleted || res.Output != "notes on topic A | notes on topic B" || res.Agent != "lead" {
		t.Fatalf("result: %+v %+v", res, res.Error)
	}
	if len(ra.research) != 4 || len(ra.lead) != 2 {
		t.Fatalf("model calls: researcher %d (want 4), lead %d (want 2)", len(ra.research), len(ra.lead))
	}
	for _, r := range ra.research {
		if r.Items[0].Role != "user" || !strings.HasPrefix(r.Items[0].Content, "topic ") || r.Agent != "researcher" {
			t.Fatalf("a researcher request does not start from its own input: %+v", r.Items)
		}
	}
	var leadSaw []string
	for _, it := range ra.lead[1].Items {
		leadSaw = append(leadSaw, it.Type+":"+it.Name+it.Output)
	}
	if got := strings.Join(leadSaw, " "); got != "message: function_call:research function_call:research function_call_output:notes on topic A function_call_output:notes on topic B" {
		t.Fatalf("the lead's second request: %s", got)
	}
	evs, _ := b.store.Events(b.ctx, sid, 0)
	paths := map[string]bool{}
	for _, ev := range evs {
		paths[ev.Type+"@"+ev.Path] = true
		if ev.Type == events.TypeToolScheduled && ev.Path == "lead/tool/r1" && !strings.Contains(string(ev.Data), `"agent":"researcher"`) {
			t.Fatalf("the agent tool's ToolScheduled does not name its agent: %s", ev.Data)
		}
	}
	for _, call := range []string{"r1", "r2"} {
		for _, want := range []string{"ModelCalled@lead/tool/%s/researcher/model/1", "ModelCalled@lead/tool/%s/researcher/model/2",
			"ToolResulted@lead/tool/%s/researcher/tool/e1", "ToolScheduled@lead/tool/%s", "ToolResulted@lead/tool/%s"} {
			if p := fmt.Sprintf(want, call); !paths[p] {
				t.Fatalf("no %s in %v", p, paths)
			}
		}
	}
	b.replayFresh(t, sid)
	if len(ra.research) != 4 || len(ra.lead) != 2 {
		t.Fatalf("the replay called a model: researcher %d, lead %d", len(ra.research), len(ra.lead))
	}
}

// TestNestedFailureFailsTheTurn: the researcher's own max_turns stops it; the caller's
// turn fails with the nested path in the error and commits nothing.
func TestNestedFailureFailsTheTurn(t *testing.T) {
	t.Parallel()
	ra := newResearchApp(1)
	b := setupApp(t, ra.app)
	res, sid := b.turn(t, "compare A and B")
	if res.Status != fsm.StatusFailed || res.Error.Code != events.CodeMaxTurns ||
		!strings.HasPrefix(res.Error.Path, "lead/tool/r") || !strings.HasSuffix(res.Error.Path, "/researcher/model/2") ||
		!strings.Contains(res.Error.Message, "agent tool research") {
		t.Fatalf("result: %+v %+v", res, res.Error)
	}
	if h, _ := b.store.History(b.ctx, sid); len(h) != 0 {
		t.Fatalf("a failed turn committed %d items", len(h))
	}
	if turn, _ := b.store.LastTurn(b.ctx, sid); turn.Status != "failed" || turn.ErrorCode != events.CodeMaxTurns {
		t.Fatalf("turn: %+v", turn)
	}
}
