package fsm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// TestWhatTheLogCannotKeepIsNeverAFailedAppend: a tool result holding a NUL becomes
// an invalid_output error the model reads; arguments nested past SQLite's JSON
// depth an invalid_arguments error (the tool never runs); a model text holding a
// NUL a typed invalid_model_output turn failure — each recorded, none a failed
// append, and the session replays.
func TestWhatTheLogCannotKeepIsNeverAFailedAppend(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	nul := functool.MustNew("nul", "nul", func(context.Context, cityArgs) (any, error) {
		ran.Add(1)
		return "binary\x00output", nil
	})
	deep := json.RawMessage(strings.Repeat(`{"a":`, 1200) + "1" + strings.Repeat("}", 1200))
	var seen []string
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			seen = outs
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "a NUL: \x00"}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "c1", Name: "nul", Arguments: json.RawMessage(`{"city":"x"}`)},
			{ID: "c2", Name: "nul", Arguments: deep},
		}}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{nul}})
	res, session := b.turn(t, "go")
	if res.Status != fsm.StatusFailed || res.Error == nil || res.Error.Code != events.CodeInvalidModelOutput {
		t.Fatalf("result = %+v, want failed with invalid_model_output", res)
	}
	if len(seen) != 2 || !strings.Contains(seen[0], `"kind":"invalid_output"`) || !strings.Contains(seen[0], "NUL") ||
		!strings.Contains(seen[1], `"kind":"invalid_arguments"`) || !strings.Contains(seen[1], "nested deeper than 999") {
		t.Fatalf("model saw %q", seen)
	}
	if ran.Load() != 1 {
		t.Fatalf("the tool ran %d times, want 1 (never with arguments the log cannot keep)", ran.Load())
	}
	evs, err := b.store.Events(b.ctx, session, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Type != events.TypeTurnFailed {
		t.Fatalf("the log ends with %s, want TurnFailed", last.Type)
	}
	b.replayFresh(t, session)
}

// TestInputTheLogCannotKeepIsRefusedNamingTheField: whoever calls the engine (the
// API, the inspector, a Go program), a NUL in an input or deep metadata is an
// invalid error naming the field, and nothing is written.
func TestInputTheLogCannotKeepIsRefusedNamingTheField(t *testing.T) {
	t.Parallel()
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: modelFunc(func(fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "ok"}}, nil
	})})
	_, err := b.engine.CreateSession(b.ctx, "test", "alice", json.RawMessage(`{"x":`+strings.Repeat("[", 1000)+strings.Repeat("]", 1000)+`}`))
	if te := (*events.Error)(nil); !asTyped(err, &te) || te.Code != events.CodeInvalid || !strings.HasPrefix(te.Field, "metadata.x") {
		t.Fatalf("deep metadata: %v", err)
	}
	s, err := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.engine.StartTurn(b.ctx, s.ID, "hello\x00")
	if te := (*events.Error)(nil); !asTyped(err, &te) || te.Code != events.CodeInvalid || te.Field != "input" {
		t.Fatalf("a NUL in the input: %v", err)
	}
	if evs, _ := b.store.Events(b.ctx, s.ID, 0); len(evs) != 1 {
		t.Fatalf("the refused input wrote %d events", len(evs)-1)
	}
}

func asTyped(err error, te **events.Error) bool { return errors.As(err, te) }

// TestAFailureQuotingANulIsRecorded: a provider's error holding a NUL fails the
// turn as model_failed — recorded, the NUL shown as U+FFFD — rather than leaving a
// turn the store refused to end.
func TestAFailureQuotingANulIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: modelFunc(func(fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{}, errors.New("upstream said \x00")
	})})
	res, session := b.turn(t, "go")
	if res.Status != fsm.StatusFailed || res.Error == nil || res.Error.Code != events.CodeModelFailed || !strings.Contains(res.Error.Message, "\uFFFD") {
		t.Fatalf("result = %+v %+v", res, res.Error)
	}
	evs, _ := b.store.Events(b.ctx, session, 0)
	if last := evs[len(evs)-1]; last.Type != events.TypeTurnFailed || strings.Contains(string(last.Data), `\u0000`) {
		t.Fatalf("the log ends with %s %s", last.Type, last.Data)
	}
}
