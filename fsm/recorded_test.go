package fsm_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// idempotentTool is a tool declared idempotent (its result waits for the turn's
// next commit).
type idempotentTool struct{ fsm.Tool }

func (t idempotentTool) Spec() fsm.ToolSpec {
	s := t.Tool.Spec()
	s.Idempotent = true
	return s
}

// TestAToolLearnsWhenItsResultIsDurable: a tool that asks (OnRecorded) is told once
// its result is in the log — at once for a tool with side effects, with the turn's
// next commit for an idempotent one — and is told only then: the log holds the
// result when the hook runs.
func TestAToolLearnsWhenItsResultIsDurable(t *testing.T) {
	t.Parallel()
	for _, idempotent := range []bool{false, true} {
		var b testBundle
		var mu sync.Mutex
		var session string
		var heard []bool
		inLog := false
		tool := fsm.Tool(functool.MustNew("apply", "acts", func(ctx context.Context, _ noArgs) (any, error) {
			call, _ := fsm.CallInfoFrom(ctx)
			asked := fsm.OnRecorded(ctx, func(recorded bool) {
				evs, _ := b.store.Events(context.Background(), call.Session, 0)
				mu.Lock()
				defer mu.Unlock()
				heard = append(heard, recorded)
				for _, ev := range evs {
					inLog = inLog || ev.Type == events.TypeToolResulted && ev.Path == call.Path
				}
			})
			if !asked {
				t.Error("the engine does not offer OnRecorded")
			}
			return "done", nil
		}))
		if idempotent {
			tool = idempotentTool{tool}
		}
		calls := 0
		model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
			calls++
			if calls == 1 {
				return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: "c1", Name: "apply", Arguments: json.RawMessage(`{}`)}}}}, nil
			}
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "ok"}}, nil
		})
		b = setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{tool}})
		res, s := b.turn(t, "go")
		session = s
		if res.Status != fsm.StatusCompleted {
			t.Fatalf("idempotent %v: %+v", idempotent, res.Error)
		}
		mu.Lock()
		if len(heard) != 1 || !heard[0] || !inLog {
			t.Fatalf("idempotent %v: heard %v, result in the log when heard: %v (session %s)", idempotent, heard, inLog, session)
		}
		mu.Unlock()
	}
	// A tool called with no engine behind it hears nothing, and knows so.
	if fsm.OnRecorded(context.Background(), func(bool) {}) {
		t.Fatal("OnRecorded said an engine would call back, with none there")
	}
}
