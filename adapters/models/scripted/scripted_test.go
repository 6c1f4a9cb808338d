package scripted_test

import (
	"context"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

func model(t *testing.T) *scripted.Model {
	t.Helper()
	m, err := scripted.New([]scripted.Rule{
		{When: scripted.When{AfterTool: "lookup", Output: `"error"`}, Reply: "failed: {{output.error.message}}"},
		{When: scripted.When{AfterTool: "lookup"}, Reply: "order {{args.id}} is {{output.status}}; {{tool.lookup.status}}"},
		{When: scripted.When{Input: `order (\d+)`}, Tools: []scripted.ToolCall{{Name: "lookup", Arguments: `{"id": {{match.1}}}`}}},
		{Reply: "hello {{input}}"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func call(t *testing.T, m *scripted.Model, items ...events.Item) fsm.ModelResponse {
	t.Helper()
	res, err := m.Call(context.Background(), fsm.ModelRequest{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRules(t *testing.T) {
	t.Parallel()
	m := model(t)
	if got := call(t, m, events.UserMessage("hi")).Text; got != "hello hi" {
		t.Fatalf("plain reply = %q", got)
	}
	res := call(t, m, events.AssistantMessage("a", "earlier"), events.UserMessage("where is order 42"))
	if len(res.ToolCalls) != 1 || string(res.ToolCalls[0].Arguments) != `{"id": 42}` || res.ToolCalls[0].ID != "call_2_1" {
		t.Fatalf("tool call = %+v", res.ToolCalls)
	}
	fc := events.Item{Type: events.ItemFunctionCall, CallID: "c1", Name: "lookup", Arguments: []byte(`{"id":42}`)}
	ok := events.Item{Type: events.ItemFunctionCallOutput, CallID: "c1", Output: `{"status":"shipped"}`}
	if got := call(t, m, events.UserMessage("where is order 42"), fc, ok).Text; got != "order 42 is shipped; shipped" {
		t.Fatalf("answer from output = %q", got)
	}
	bad := events.Item{Type: events.ItemFunctionCallOutput, CallID: "c1", Output: `{"error":{"kind":"failed","message":"no such order"}}`}
	if got := call(t, m, events.UserMessage("where is order 42"), fc, bad).Text; got != "failed: no such order" {
		t.Fatalf("answer from error = %q", got)
	}
	if m.Calls() != 4 {
		t.Fatalf("calls = %d", m.Calls())
	}
}

func TestToolRulesFireOnlyAtTurnStart(t *testing.T) {
	t.Parallel()
	m, _ := scripted.New([]scripted.Rule{{When: scripted.When{Input: "go"}, Tools: []scripted.ToolCall{{Name: "x"}}}})
	fc := events.Item{Type: events.ItemFunctionCall, CallID: "c1", Name: "x"}
	out := events.Item{Type: events.ItemFunctionCallOutput, CallID: "c1", Output: "1"}
	_, err := m.Call(context.Background(), fsm.ModelRequest{Items: []events.Item{events.UserMessage("go"), fc, out}})
	if err == nil || !strings.Contains(err.Error(), "no rule matches") {
		t.Fatalf("err = %v, want no rule to match after a tool output", err)
	}
}

func TestBadRulesRefused(t *testing.T) {
	t.Parallel()
	for _, rules := range [][]scripted.Rule{nil, {{}}, {{When: scripted.When{Input: "("}, Reply: "x"}}, {{Tools: []scripted.ToolCall{{}}}},
		{{When: scripted.When{Instructions: "["}, Reply: "x"}}} {
		if _, err := scripted.New(rules); err == nil {
			t.Fatalf("rules %+v accepted", rules)
		}
	}
}

// TestARuleFollowsTheInstructions: a rule with instructions answers only an agent
// whose instructions match it; told otherwise, the next rule answers.
func TestARuleFollowsTheInstructions(t *testing.T) {
	t.Parallel()
	m, err := scripted.New([]scripted.Rule{
		{When: scripted.When{Input: `order (\d+)`, Instructions: `(?i)use the tools`}, Tools: []scripted.ToolCall{{Name: "lookup", Arguments: `{"id": {{match.1}}}`}}},
		{When: scripted.When{Input: `order (\d+)`}, Reply: "order {{match.1}} is probably fine"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for instructions, want := range map[string]string{"Use the tools; never guess.": "lookup", "Answer from what you know.": "order 7 is probably fine"} {
		res, err := m.Call(context.Background(), fsm.ModelRequest{Instructions: instructions, Items: []events.Item{events.UserMessage("where is order 7?")}})
		got := res.Text
		if len(res.ToolCalls) > 0 {
			got = res.ToolCalls[0].Name
		}
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", instructions, got, err, want)
		}
	}
}
