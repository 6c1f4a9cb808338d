package fsm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// evidenceTypes are the session's event types and paths, for the evidence tests.
func evidenceTrail(t *testing.T, b testBundle, session string) []string {
	t.Helper()
	evs, err := b.store.Events(b.ctx, session, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Type == events.TypeAnswerWithoutEvidence {
			p, _ := events.DecodeAs[*events.AnswerWithoutEvidence](ev)
			out = append(out, ev.Path+" "+p.Action)
		}
		if ev.Type == events.TypeModelCalled || ev.Type == events.TypeToolResulted {
			out = append(out, ev.Path)
		}
	}
	return out
}

// TestAnAnswerWithoutEvidenceGoesBackOnce: an agent with require_evidence that answers
// without calling a tool has its answer held back (in no history) and hears the note
// once; a model that then calls a tool answers from it, unmarked; one that answers
// again without one has its answer stand, marked. Each replays without a model call.
func TestAnAnswerWithoutEvidenceGoesBackOnce(t *testing.T) {
	t.Parallel()
	obeys := func(note string) fsm.Model {
		var n atomic.Int64
		return modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
			n.Add(1)
			last := r.Items[len(r.Items)-1]
			switch {
			case last.Type == events.ItemFunctionCallOutput:
				return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "from the tool: " + last.Output}}, nil
			case last.Role == "system" && last.Content == note:
				return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: fmt.Sprint("c", n.Load()), Name: "echo", Arguments: []byte(`{"n":42}`)}}}}, nil
			}
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "order 42 is shipped"}}, nil // made up
		})
	}
	stubborn := modelFunc(func(fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "order 42 is shipped"}}, nil
	})
	for _, tc := range []struct {
		name   string
		rule   *fsm.EvidenceRule
		model  fsm.Model
		output string
		trail  string
	}{
		{"obeys the default note", &fsm.EvidenceRule{}, obeys(fsm.DefaultEvidenceNote), `from the tool: {"n":42}`,
			"a/model/1 a/evidence/1 sent_back a/model/2 a/tool/c2 a/model/3"},
		{"obeys its own note", &fsm.EvidenceRule{Tools: []string{"echo"}, Note: "look it up"}, obeys("look it up"), `from the tool: {"n":42}`,
			"a/model/1 a/evidence/1 sent_back a/model/2 a/tool/c2 a/model/3"},
		{"answers again without a tool", &fsm.EvidenceRule{}, stubborn, "order 42 is shipped",
			"a/model/1 a/evidence/1 sent_back a/model/2 a/evidence/2 stood"},
		{"off", nil, stubborn, "order 42 is shipped", "a/model/1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: tc.model, Tools: []fsm.Tool{echoTool()}, RequireEvidence: tc.rule})
			res, sid := b.turn(t, "where is order 42?")
			if res.Status != fsm.StatusCompleted || res.Output != tc.output {
				t.Fatalf("result = %+v %v, want completed with %q", res, res.Error, tc.output)
			}
			if got := strings.Join(evidenceTrail(t, b, sid), " "); got != tc.trail {
				t.Errorf("the log: %s\nwant      %s", got, tc.trail)
			}
			if tc.rule != nil {
				hist, _ := b.store.History(b.ctx, sid)
				var said []string
				for _, it := range hist {
					said = append(said, it.Role+":"+it.Content)
				}
				if !strings.HasPrefix(strings.Join(said, "|"), "user:where is order 42?|system:"+map[bool]string{true: "look it up", false: "turnlog: your answer was held back"}[tc.rule.Note != ""]) {
					t.Errorf("the history does not hold the note right after the question (the answer held back joins nothing): %v", said)
				}
			}
			b.replayFresh(t, sid)
		})
	}
}

// TestARejectedOrUnnamedCallIsNoEvidence: a call a person rejected fetched nothing,
// nor does a call of a tool the rule does not name: the answer after either goes back.
func TestARejectedOrUnnamedCallIsNoEvidence(t *testing.T) {
	t.Parallel()
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if last := r.Items[len(r.Items)-1]; last.Role == "user" {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: "c1", Name: "echo", Arguments: []byte(`{"n":1}`)}}}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done"}}, nil
	})
	const trail = "a/model/1 a/tool/c1 a/model/2 a/evidence/1 sent_back a/model/3 a/evidence/2 stood"
	t.Run("a tool the rule does not name", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{echoTool()}, RequireEvidence: &fsm.EvidenceRule{Tools: []string{"lookup"}}})
		res, sid := b.turn(t, "go")
		if res.Status != fsm.StatusCompleted {
			t.Fatalf("result = %+v %v", res, res.Error)
		}
		if got := strings.Join(evidenceTrail(t, b, sid), " "); got != trail {
			t.Errorf("the log: %s\nwant      %s", got, trail)
		}
		b.replayFresh(t, sid)
	})
	t.Run("a call a person rejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{&askFirst{echoTool()}}, RequireEvidence: &fsm.EvidenceRule{}})
		res, sid := b.turn(t, "go")
		if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 {
			t.Fatalf("result = %+v, want it waiting for an approval", res)
		}
		no := false
		st, err := b.engine.Resume(b.ctx, sid, "bob", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: &no}})
		if err != nil {
			t.Fatal(err)
		}
		if res, err = st.Wait(); err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("resume: %+v %v", res, err)
		}
		if got := strings.Join(evidenceTrail(t, b, sid), " "); got != trail {
			t.Errorf("the log: %s\nwant      %s", got, trail)
		}
		b.replayFresh(t, sid)
	})
}

// askFirst is a tool whose every call waits for a person's approval.
type askFirst struct{ fsm.Tool }

func (t *askFirst) Spec() fsm.ToolSpec { s := t.Tool.Spec(); s.NeedsApproval = true; return s }

// TestAnAnswerThatMustRestOnEvidenceDoesNotStreamFirst: before a tool ran, the
// model's text is not streamed (it may go back); once one ran, it is.
func TestAnAnswerThatMustRestOnEvidenceDoesNotStreamFirst(t *testing.T) {
	t.Parallel()
	var streamed []bool // for each model call: whether it was given OnText
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		streamed = append(streamed, r.OnText != nil)
		if last := r.Items[len(r.Items)-1]; last.Role == "system" {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: "c1", Name: "echo", Arguments: []byte(`{"n":1}`)}}}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done"}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{echoTool()}, RequireEvidence: &fsm.EvidenceRule{}})
	if res, _ := b.turn(t, "go"); res.Status != fsm.StatusCompleted {
		t.Fatalf("result = %+v %v", res, res.Error)
	}
	if fmt.Sprint(streamed) != "[false false true]" {
		t.Errorf("streamed per model call: %v, want [false false true] (held until a tool ran)", streamed)
	}
}

// nothingTool is a tool that acts on nothing (as update_plan tells the policy).
type nothingTool struct{ fsm.Tool }

func (nothingTool) PolicyCall(json.RawMessage) fsm.PolicyCall { return fsm.PolicyCall{} }

// TestAFailedCallOrOneThatActsOnNothingIsNoEvidence: a call that failed (an unknown
// tool here) or one that acts on nothing brought nothing back.
func TestAFailedCallOrOneThatActsOnNothingIsNoEvidence(t *testing.T) {
	t.Parallel()
	for name, call := range map[string]string{"an unknown tool": "nope", "a tool that acts on nothing": "echo"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
				if last := r.Items[len(r.Items)-1]; last.Role == "user" {
					return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: "c1", Name: call, Arguments: []byte(`{"n":1}`)}}}}, nil
				}
				return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done"}}, nil
			})
			b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{nothingTool{echoTool()}}, RequireEvidence: &fsm.EvidenceRule{}})
			res, sid := b.turn(t, "go")
			if res.Status != fsm.StatusCompleted {
				t.Fatalf("result = %+v %v", res, res.Error)
			}
			if got := strings.Join(evidenceTrail(t, b, sid), " "); !strings.Contains(got, "a/evidence/1 sent_back") {
				t.Errorf("the log: %s", got)
			}
		})
	}
}
