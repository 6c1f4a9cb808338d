package contextmgr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
)

// TestBuildKeepsWhatMustStay: with 300 turns of history and a 1,500-token window the
// request leaves most items out (saying so), yet keeps the latest user message, the
// calls the model just made with their results, the most recent failure with its
// call, and the plan; it asks for a compaction of the history before the turn. With
// a window too small for those, the build fails rather than exceed it.
func TestBuildKeepsWhatMustStay(t *testing.T) {
	items := sessionItems(300) // turn 294 is the last failure (every seventh fails)
	items = append(items[:20], append([]events.Item{
		{Type: events.ItemFunctionCall, CallID: "plan_1", Name: "update_plan", Arguments: []byte(`{"steps":["fix pkg/mod3","rerun the build"]}`)},
		{Type: events.ItemFunctionCallOutput, CallID: "plan_1", Output: `{"ok":true}`},
	}, items[20:]...)...)
	turnStart := len(items)
	items = append(items, events.UserMessage("now run the build of pkg/mod301"),
		events.Item{Type: events.ItemFunctionCall, CallID: "call_now", Name: "run_build", Arguments: []byte(`{"module":"pkg/mod301"}`)},
		events.Item{Type: events.ItemFunctionCallOutput, CallID: "call_now", Output: `{"exit_code":0,"stdout":"ok pkg/mod301"}`})
	m := manager(t, 1500)
	p := m.Prepare()
	p.Append(items...)
	req, err := p.Build(turnStart)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, it := range req.Items {
		all = append(all, it.Content+string(it.Arguments)+it.Output)
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{"now run the build of pkg/mod301", "ok pkg/mod301", `{"module":"pkg/mod301"}`, "E_BUILD_294", `"module":"pkg/mod294"`, "fix pkg/mod3", "items (", "are left out of this request"} {
		if !strings.Contains(text, want) {
			t.Errorf("the request lacks %q", want)
		}
	}
	if req.Tokens > 1500 || req.Needed <= 1500 || req.Dropped == 0 || req.Compact == nil || req.Compact.From != 0 || req.Compact.Covers != turnStart {
		t.Fatalf("tokens %d, needed %d, dropped %d, compact %+v", req.Tokens, req.Needed, req.Dropped, req.Compact)
	}
	// Calls and their outputs are kept or left out together.
	calls, outputs := map[string]bool{}, map[string]bool{}
	for _, it := range req.Items {
		switch it.Type {
		case events.ItemFunctionCall:
			calls[it.CallID] = true
		case events.ItemFunctionCallOutput:
			outputs[it.CallID] = true
		}
	}
	for id := range outputs {
		if !calls[id] {
			t.Errorf("output %s without its call", id)
		}
	}

	tiny := manager(t, 120)
	p = tiny.Prepare()
	p.Append(items...)
	var overflow *contextmgr.OverflowError
	if _, err := p.Build(turnStart); !errors.As(err, &overflow) || overflow.Window != 120 {
		t.Fatalf("a window too small: %v", err)
	}
}

// TestTruncateStepsBack: after a failed turn's items are forgotten, the request is
// the one built before they came (its newest user message, failure and plan again).
func TestTruncateStepsBack(t *testing.T) {
	items := sessionItems(30)
	m := manager(t, 1500)
	p := m.Prepare()
	p.Append(items...)
	before, err := p.Build(len(items) - 4)
	if err != nil {
		t.Fatal(err)
	}
	p.Append(events.UserMessage("a turn that fails"),
		events.Item{Type: events.ItemFunctionCall, CallID: "x1", Name: "run_build", Arguments: []byte(`{}`)},
		events.Item{Type: events.ItemFunctionCallOutput, CallID: "x1", Output: `{"error":{"kind":"failed","message":"E_NEW"}}`},
		events.Item{Type: events.ItemFunctionCall, CallID: "p1", Name: "update_plan", Arguments: []byte(`{"steps":["x"]}`)},
		events.Item{Type: events.ItemContextSummary, Content: "## Goal\nx", Covers: 10})
	p.Truncate(len(items))
	after, err := p.Build(len(items) - 4)
	if err != nil {
		t.Fatal(err)
	}
	if requestText(before) != requestText(after) {
		t.Fatalf("the request after truncation differs:\n%s\n---\n%s", requestText(before), requestText(after))
	}
}

func requestText(r contextmgr.Request) string {
	var b strings.Builder
	for _, it := range r.Items {
		b.WriteString(it.Content + string(it.Arguments) + it.Output + "\n")
	}
	return b.String()
}
