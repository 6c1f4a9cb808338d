package fsm_test

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

func TestInputGuardrailsRunInOrderAndStopAtTheFirstTrip(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		calls.Add(1)
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "ok"}}, nil
	})
	agent := &fsm.Agent{Name: "a", LLM: "m", Model: model, InputGuardrails: []fsm.Guardrail{
		{Name: "short", Kind: fsm.GuardrailMaxLength, Max: 100},
		{Name: "no-passwords", Kind: fsm.GuardrailRegex, Pattern: regexp.MustCompile(`(?i)password`)},
		{Name: "never-reached", Kind: fsm.GuardrailRegex, Pattern: regexp.MustCompile(`.`)},
	}}
	b := setup(t, agent)
	s, _ := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	res, err := b.engine.RunTurn(b.ctx, s.ID, "my password is hunter2")
	if err != nil || res.Status != fsm.StatusFailed || res.Error.Code != events.CodePolicyDenied || !strings.Contains(res.Error.Message, "no-passwords") {
		t.Fatalf("result = %+v %+v %v", res, res.Error, err)
	}
	if calls.Load() != 0 {
		t.Fatalf("the model was called %d times behind a tripped input guardrail", calls.Load())
	}
	evs, _ := b.store.Events(b.ctx, s.ID, 0)
	var seen []string
	for _, ev := range evs {
		if strings.HasPrefix(ev.Type, "Guardrail") {
			seen = append(seen, ev.Type+":"+ev.Path)
		}
	}
	if got, want := strings.Join(seen, ","), "GuardrailChecked:a/guardrail/input/short,GuardrailTripped:a/guardrail/input/no-passwords"; got != want {
		t.Fatalf("guardrail events %s, want %s", got, want)
	}
	if h, _ := b.store.History(b.ctx, s.ID); len(h) != 0 {
		t.Fatalf("a tripped turn committed %v", h)
	}
}

type textRecorder struct {
	streamed atomic.Bool
	answer   string
}

func (m *textRecorder) model() fsm.Model {
	return modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if r.OnText != nil {
			m.streamed.Store(true)
			r.OnText(m.answer)
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: m.answer}}, nil
	})
}

func TestOutputGuardrailHoldsTheAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		answer string
		status string
	}{{"the code is 1234", fsm.StatusCompleted}, {"the secret is 1234", fsm.StatusFailed}} {
		rec := &textRecorder{answer: tc.answer}
		agent := &fsm.Agent{Name: "a", LLM: "m", Model: rec.model(), OutputGuardrails: []fsm.Guardrail{
			{Name: "no-secrets", Kind: fsm.GuardrailRegex, Pattern: regexp.MustCompile(`secret`)}}}
		b := setup(t, agent)
		res, _ := b.turn(t, "tell me")
		if res.Status != tc.status || rec.streamed.Load() {
			t.Fatalf("%q: status %s (want %s), streamed %v (an agent with output guardrails must not stream)", tc.answer, res.Status, tc.status, rec.streamed.Load())
		}
		if tc.status == fsm.StatusFailed && (res.Error.Code != events.CodePolicyDenied || !strings.Contains(res.Error.Message, "no-secrets")) {
			t.Fatalf("trip: %+v", res.Error)
		}
	}
}

// TestLLMJudgeVerdictIsRecordedAndReplayed: the judge's call is an activity under the
// guardrail's path; a replay uses the recorded verdict and calls no judge.
func TestLLMJudgeVerdictIsRecordedAndReplayed(t *testing.T) {
	t.Parallel()
	var judged, answered atomic.Int64
	judge := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		judged.Add(1)
		if r.Instructions != "Answer PASS or FAIL." || len(r.Items) != 1 {
			return fsm.ModelResponse{}, fmt.Errorf("unexpected judge request %+v", r)
		}
		verdict := "PASS"
		if strings.Contains(r.Items[0].Content, "refund") {
			verdict = "FAIL"
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: verdict}}, nil
	})
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		answered.Add(1)
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "hi"}}, nil
	})
	agent := &fsm.Agent{Name: "a", LLM: "m", Model: model, InputGuardrails: []fsm.Guardrail{{Name: "topic", Kind: fsm.GuardrailLLMJudge,
		LLM: "judge", Model: judge, Instructions: "Answer PASS or FAIL.", PassIf: regexp.MustCompile(`^PASS$`)}}}
	b := setup(t, agent)
	s, _ := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	if res, err := b.engine.RunTurn(b.ctx, s.ID, "hello"); err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("passing input: %+v %v", res, err)
	}
	res, err := b.engine.RunTurn(b.ctx, s.ID, "a refund please")
	if err != nil || res.Status != fsm.StatusFailed || res.Error.Code != events.CodePolicyDenied || !strings.Contains(res.Error.Message, `the judge answered "FAIL"`) {
		t.Fatalf("judged input: %+v %+v %v", res, res.Error, err)
	}
	if judged.Load() != 2 || answered.Load() != 1 {
		t.Fatalf("judge calls %d (want 2), agent calls %d (want 1)", judged.Load(), answered.Load())
	}
	b.replayFresh(t, s.ID)
	if judged.Load() != 2 || answered.Load() != 1 {
		t.Fatalf("replay called the judge (%d) or the agent (%d) again", judged.Load(), answered.Load())
	}
}
