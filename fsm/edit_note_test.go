package fsm_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// TestEditByAnUnnamedCallerIsTold: an edit answered without a user name (Resume with
// user "") is still an edit: the model is told, as the history shows.
func TestEditByAnUnnamedCallerIsTold(t *testing.T) {
	t.Parallel()
	b := setupApproval(t)
	res, sid := b.suspended(t)
	st, err := b.engine.Resume(b.ctx, sid, "", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: yes(), Arguments: json.RawMessage(`{"order_id":43}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Wait(); err != nil {
		t.Fatal(err)
	}
	if b.refundArgs.Load() != 43 {
		t.Fatalf("ran with %v", b.refundArgs.Load())
	}
	shown, _ := b.store.HistoryAsRun(b.ctx, sid)
	edited := false
	for _, it := range shown {
		edited = edited || strings.Contains(string(it), `"proposed_arguments"`)
	}
	saw := b.saw.Load().(string)
	if !edited || !strings.Contains(saw, "A reviewer changed") {
		t.Fatalf("history shows an edit, but the model saw no note: %s", saw)
	}
}

type textArgs struct {
	Text string `json:"text"`
}

type needsApproval struct{ *functool.Tool[textArgs] }

func (t *needsApproval) Spec() fsm.ToolSpec { s := t.Tool.Spec(); s.NeedsApproval = true; return s }

// TestEditNoteIsRedacted: a redact rule on tool output hides a secret a reviewer put
// in the arguments from the note the model (and the log) get.
func TestEditNoteIsRedacted(t *testing.T) {
	t.Parallel()
	var saw atomic.Value
	echo := functool.MustNew("echo", "echoes", func(_ context.Context, a textArgs) (any, error) {
		return map[string]any{"echo": a.Text}, nil
	})
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			saw.Store(strings.Join(outs, " | "))
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done"}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"hello"}`)}}}}, nil
	})
	policy := &fsm.GuardrailPolicy{Rules: []fsm.PolicyRule{{Name: "key", Action: "redact", Pattern: regexp.MustCompile(`sk-[a-z0-9]+`),
		Targets: []string{fsm.TargetToolInput, fsm.TargetToolOutput}}}}
	b := setupPolicy(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{&needsApproval{echo}}}, policy)
	res, sid := b.turn(t, "go")
	if res.Status != fsm.StatusSuspended {
		t.Fatalf("%+v", res)
	}
	st, err := b.engine.Resume(b.ctx, sid, "rev", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: yes(), Arguments: json.RawMessage(`{"text":"sk-abc123"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Wait(); err != nil {
		t.Fatal(err)
	}
	got := saw.Load().(string)
	if strings.Contains(got, "sk-abc123") {
		t.Fatalf("the model saw the secret the policy redacts: %s", got)
	}
}
