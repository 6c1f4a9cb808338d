package fsm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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

// TestApprovalInsideANestedAgent: the researcher's refund needs approval, and so does
// the lead's own refund in the same response. The turn suspends with both questions
// in call order (the nested one names its nested path); one resume_map answers both;
// the turn resumes inside the nested agent without asking any model again what it
// already answered.
func TestApprovalInsideANestedAgent(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int64
	var leadCalls, researchCalls atomic.Int64
	lead := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		leadCalls.Add(1)
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: strings.Join(outs, " | ")}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "r1", Name: "research", Arguments: json.RawMessage(`{"input":"refund 7"}`)},
			{ID: "c2", Name: "refund", Arguments: json.RawMessage(`{"order_id":42}`)},
		}}}, nil
	})
	researcher := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		researchCalls.Add(1)
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "researcher: " + outs[0]}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "n1", Name: "refund", Arguments: json.RawMessage(`{"order_id":7}`)}}}}, nil
	})
	refund := &approval{countingRefund(&refunds)}
	b := setupApp(t, &fsm.App{Name: "test", StartAgent: "lead", Agents: map[string]*fsm.Agent{
		"lead":       {Name: "lead", LLM: "m", Model: lead, Tools: []fsm.Tool{refund}, AgentTools: []fsm.AgentTool{{Agent: "researcher", Name: "research"}}},
		"researcher": {Name: "researcher", LLM: "m", Model: researcher, Tools: []fsm.Tool{refund}},
	}})
	res, sid := b.turn(t, "refund 7 and 42")
	if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 2 ||
		res.Interrupts[0].Path != "lead/tool/r1/researcher/tool/n1/approval" || res.Interrupts[1].Path != "lead/tool/c2/approval" {
		t.Fatalf("suspended: %+v", res)
	}
	if refunds.Load() != 0 || leadCalls.Load() != 1 || researchCalls.Load() != 1 {
		t.Fatalf("while suspended: refunds %d, lead %d, researcher %d calls", refunds.Load(), leadCalls.Load(), researchCalls.Load())
	}
	if p, _ := b.store.PendingInterrupts(b.ctx, sid); len(p) != 2 {
		t.Fatalf("pending: %+v", p)
	}
	bad := "x"
	if _, err := b.engine.Resume(b.ctx, sid, "r", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: yes(), Arguments: json.RawMessage(`{"order_id":` + bad + `}`)},
		res.Interrupts[1].ID: {Confirmed: yes()}}); !events.IsCode(err, events.CodeInvalid) {
		t.Fatalf("bad edited arguments for the nested tool: err = %v", err)
	}
	st, err := b.engine.Resume(b.ctx, sid, "r", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: yes()}, res.Interrupts[1].ID: {Confirmed: yes()}})
	if err != nil {
		t.Fatal(err)
	}
	done, err := st.Wait()
	if err != nil || done.Status != fsm.StatusCompleted || done.Output != `researcher: {"order_id":7} | {"order_id":42}` {
		t.Fatalf("resumed: %+v %v", done, err)
	}
	if refunds.Load() != 2 || leadCalls.Load() != 2 || researchCalls.Load() != 2 {
		t.Fatalf("after resume: refunds %d (want 2), lead %d (want 2), researcher %d (want 2) calls", refunds.Load(), leadCalls.Load(), researchCalls.Load())
	}
	b.replayFresh(t, sid)
}

// TestAgentToolNeedingApproval: an agent tool marked needs_approval does not start its
// agent before a person approves; a rejection reaches the caller's model instead.
func TestAgentToolNeedingApproval(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		ra := newResearchApp(0)
		ra.app.Agents["lead"].AgentTools[0].NeedsApproval = true
		b := setupApp(t, ra.app)
		res, sid := b.turn(t, "compare A and B")
		if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 2 || res.Interrupts[0].Path != "lead/tool/r1/approval" || len(ra.research) != 0 {
			t.Fatalf("suspended: %+v; researcher called %d times", res, len(ra.research))
		}
		answer := fsm.Answer{Confirmed: &approve}
		st, err := b.engine.Resume(b.ctx, sid, "r", map[string]fsm.Answer{res.Interrupts[0].ID: answer, res.Interrupts[1].ID: answer})
		if err != nil {
			t.Fatal(err)
		}
		done, err := st.Wait()
		want := "notes on topic A | notes on topic B"
		if !approve {
			want = `{"error":{"kind":"rejected","message":"` + fsm.DefaultRejection + `"}} | {"error":{"kind":"rejected","message":"` + fsm.DefaultRejection + `"}}`
		}
		if err != nil || done.Status != fsm.StatusCompleted || done.Output != want {
			t.Fatalf("approve=%v: %+v %v", approve, done, err)
		}
		if calls := len(ra.research); (approve && calls != 4) || (!approve && calls != 0) {
			t.Fatalf("approve=%v: the researcher was called %d times", approve, calls)
		}
	}
}
