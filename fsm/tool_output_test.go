package fsm_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

type cityArgs struct {
	City string `json:"city"`
}

// TestToolOutputsAndErrorsTheModelReads: a string result reaches the model as its
// text, other values as canonical JSON; a *fsm.ToolError keeps its kind and shows its
// message when it is public; arguments that are not JSON are an invalid_arguments
// error saying so, and the tool never runs.
func TestToolOutputsAndErrorsTheModelReads(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	text := functool.MustNew("text", "text", func(_ context.Context, a cityArgs) (any, error) {
		ran.Add(1)
		return "rain in " + a.City + " <soon> & \"cold\"", nil
	})
	value := functool.MustNew("value", "value", func(context.Context, cityArgs) (any, error) {
		return map[string]any{"b": 2, "a": []int{1}}, nil
	})
	public := functool.MustNew("public", "public", func(context.Context, cityArgs) (any, error) {
		return nil, &fsm.ToolError{Kind: fsm.ToolErrOutcomeUnknown, Message: "HTTP 502: the outcome is unknown", Public: true}
	})
	private := functool.MustNew("private", "private", func(context.Context, cityArgs) (any, error) {
		return nil, &fsm.ToolError{Kind: fsm.ToolErrOutcomeUnknown, Message: "stack trace with secrets"}
	})
	var seen []string
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			seen = outs
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "ok"}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "c1", Name: "text", Arguments: json.RawMessage(`{"city": "Oslo"}`)},
			{ID: "c2", Name: "value", Arguments: json.RawMessage(`{"city":"x"}`)},
			{ID: "c3", Name: "public", Arguments: json.RawMessage(`{"city":"x"}`)},
			{ID: "c4", Name: "private", Arguments: json.RawMessage(`{"city":"x"}`)},
			{ID: "c5", Name: "text", Arguments: json.RawMessage(`{"city": "Os`)},
		}}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{text, value, public, private}})
	res, session := b.turn(t, "go")
	if res.Status != fsm.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	want := []string{
		`rain in Oslo <soon> & "cold"`,
		`{"a":[1],"b":2}`,
		`{"error":{"kind":"outcome_unknown","message":"HTTP 502: the outcome is unknown"}}`,
		`{"error":{"kind":"outcome_unknown","message":"the tool's outcome is unknown: it may have acted; do not call it again for the same purpose without checking"}}`,
		`{"error":{"kind":"invalid_arguments","message":"the arguments are not valid JSON ($.city: malformed JSON: unterminated string); send one JSON object that fits the tool's parameters"}}`,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("model saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	if ran.Load() != 1 {
		t.Fatalf("the text tool ran %d times, want 1 (never with arguments that are not JSON)", ran.Load())
	}
	evs, _ := b.store.Events(b.ctx, session, 0)
	for _, ev := range evs {
		if ev.Type == events.TypeToolScheduled && strings.HasSuffix(ev.Path, "/c5") {
			t.Fatal("a call whose arguments are not JSON was scheduled")
		}
	}
	b.replayFresh(t, session)
}

// TestDuplicateCallIDsAreRenamed: a provider that repeats tool call ids (within a
// response, across a turn's model calls, or sends none) gets them renamed in the
// order they came; the paths stay distinct and a replay agrees.
func TestDuplicateCallIDsAreRenamed(t *testing.T) {
	t.Parallel()
	calls := 0
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		calls++
		switch calls {
		case 1:
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
				{ID: "call_0", Name: "echo", Arguments: json.RawMessage(`{"text":"a"}`)},
				{ID: "call_0", Name: "echo", Arguments: json.RawMessage(`{"text":"b"}`)},
				{ID: "", Name: "echo", Arguments: json.RawMessage(`{"text":"c"}`)},
			}}}, nil
		case 2:
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
				{ID: "call_0", Name: "echo", Arguments: json.RawMessage(`{"text":"d"}`)},
				{ID: "", Name: "echo", Arguments: json.RawMessage(`{"text":"e"}`)},
			}}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done"}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{echoTool()}})
	res, session := b.turn(t, "go")
	if res.Status != fsm.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	var ids []string
	for _, it := range res.Items {
		if it.Type == events.ItemFunctionCall {
			ids = append(ids, it.CallID)
		}
	}
	if got, want := strings.Join(ids, ","), "call_0,call_0_2,call,call_0_3,call_2"; got != want {
		t.Fatalf("call ids = %s, want %s", got, want)
	}
	b.replayFresh(t, session)
}
