package fsm_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/projection"
)

const secret = "sk-live-9f8e7d6c5b4a39281706"

var apiKeys = regexp.MustCompile(`sk-live-[0-9a-z]{16,}`)

// requestLog keeps every request a model received, as JSON.
type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) add(r fsm.ModelRequest) {
	raw, _ := json.Marshal(r.Items)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, string(raw))
}

func (l *requestLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.seen, "\n")
}

func (l *requestLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// accountModel calls the account tool with the input and a secret of its own as the
// note, then repeats what the tool returned.
func accountModel(log *requestLog) fsm.Model {
	return modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		log.add(r)
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "the account: " + outs[0]}}, nil
		}
		note, _ := json.Marshal(map[string]string{"note": r.Items[len(r.Items)-1].Content + " / " + secret})
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: "c1", Name: "account", Arguments: note}}}}, nil
	})
}

type noteArgs struct {
	Note string `json:"note"`
}

func accountTool(runs *atomic.Int64) fsm.Tool {
	return functool.MustNew("account", "reads an account", func(_ context.Context, a noteArgs) (any, error) {
		runs.Add(1)
		return map[string]any{"owner": "ada", "api_key": secret, "nested": []string{"key " + secret}}, nil
	})
}

func allEventData(t *testing.T, b testBundle, sid string) string {
	t.Helper()
	evs, err := b.store.Events(b.ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, ev := range evs {
		sb.Write(ev.Data)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// TestPolicyRedactsBeforeAnythingSeesIt: a secret in the input and in a tool's output
// is replaced before the log, the model and the history see it; what the rules did is
// recorded with the content, counts only.
func TestPolicyRedactsBeforeAnythingSeesIt(t *testing.T) {
	t.Parallel()
	var runs atomic.Int64
	log := &requestLog{}
	policy := &fsm.GuardrailPolicy{Rules: []fsm.PolicyRule{
		{Name: "api-keys", Action: fsm.PolicyRedact, Pattern: apiKeys},
		{Name: "owners", Action: fsm.PolicyLog, Pattern: regexp.MustCompile(`ada`), Targets: []string{fsm.TargetToolOutput}},
	}}
	b := setupPolicy(t, &fsm.Agent{Name: "a", LLM: "m", Model: accountModel(log), Tools: []fsm.Tool{accountTool(&runs)}}, policy)
	res, sid := b.turn(t, "my key is "+secret+", show my account")
	if res.Status != fsm.StatusCompleted || runs.Load() != 1 {
		t.Fatalf("result %+v, tool runs %d", res, runs.Load())
	}
	history, err := b.store.History(b.ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(history)
	data := allEventData(t, b, sid)
	for where, text := range map[string]string{"events": data, "history": string(raw), "model requests": log.all(), "output": res.Output} {
		if strings.Contains(text, "sk-live-") {
			t.Fatalf("the secret reached the %s: %s", where, text)
		}
		if !strings.Contains(text, "[REDACTED:api-keys]") {
			t.Fatalf("the %s show no redaction: %s", where, text)
		}
	}
	for _, want := range []string{
		`"policy":[{"action":"redact","matches":1,"rule":"api-keys","target":"model_input"}]`,
		`"policy":[{"action":"redact","matches":1,"rule":"api-keys","target":"tool_input"}]`,
		`"policy":[{"action":"redact","matches":2,"rule":"api-keys","target":"tool_output"},{"action":"log","matches":1,"rule":"owners","target":"tool_output"}]`,
	} {
		if !strings.Contains(data, want) {
			t.Fatalf("events lack %s:\n%s", want, data)
		}
	}
	// The recording replays: redaction happened once, when the content was produced.
	b.replayFresh(t, sid)
	if runs.Load() != 1 || log.count() != 2 {
		t.Fatalf("replay ran the tool (%d) or the model (%d calls)", runs.Load(), log.count())
	}
}

// TestPolicyBlocks: a block rule fails the turn with policy_denied naming the rule,
// wherever it matches, before anything further runs; nothing is committed.
func TestPolicyBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		target      string
		pattern     string
		input       string
		toolRuns    int64
		modelCalls  int
		path        string
		reasonNames string
	}{
		{fsm.TargetModelInput, `4111`, "card 4111 please", 0, 0, "a/input/policy/stop", "input"},
		{fsm.TargetToolInput, `forbidden`, "forbidden note", 0, 1, "a/model/1/policy/stop", "tool call arguments"},
		{fsm.TargetToolOutput, `sk-live`, "fine", 1, 1, "a/tool/c1/policy/stop", "tool output"},
	} {
		var runs atomic.Int64
		log := &requestLog{}
		policy := &fsm.GuardrailPolicy{Rules: []fsm.PolicyRule{{Name: "stop", Action: fsm.PolicyBlock, Pattern: regexp.MustCompile(tc.pattern), Targets: []string{tc.target}}}}
		b := setupPolicy(t, &fsm.Agent{Name: "a", LLM: "m", Model: accountModel(log), Tools: []fsm.Tool{accountTool(&runs)}}, policy)
		res, sid := b.turn(t, tc.input)
		if res.Status != fsm.StatusFailed || res.Error.Code != events.CodePolicyDenied || res.Error.Path != tc.path ||
			!strings.Contains(res.Error.Message, "rule stop") || !strings.Contains(res.Error.Message, tc.reasonNames) {
			t.Fatalf("%s: result %+v %+v", tc.target, res, res.Error)
		}
		if runs.Load() != tc.toolRuns || log.count() != tc.modelCalls {
			t.Fatalf("%s: tool ran %d times (want %d), model called %d times (want %d)", tc.target, runs.Load(), tc.toolRuns, log.count(), tc.modelCalls)
		}
		data := allEventData(t, b, sid)
		if !strings.Contains(data, `"kind":"policy","name":"stop"`) || strings.Contains(data, "TurnCommitted") {
			t.Fatalf("%s: events %s", tc.target, data)
		}
		if h, _ := b.store.History(b.ctx, sid); len(h) != 0 {
			t.Fatalf("%s: a blocked turn committed history %+v", tc.target, h)
		}
	}
}

// reviewBundle: the model's first response offers a voucher (held by the review rule)
// and asks for a refund (needs approval) and a lookup (free); then it answers "done".
type reviewBundle struct {
	testBundle
	log              *requestLog
	refunds, lookups *atomic.Int64
}

func setupReview(t *testing.T) reviewBundle {
	t.Helper()
	var refunds, lookups atomic.Int64
	log := &requestLog{}
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		log.add(r)
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done: " + strings.Join(outs, " | ")}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "I add a voucher and refund order 42", ToolCalls: []events.ToolCall{
			{ID: "c1", Name: "refund", Arguments: json.RawMessage(`{"order_id":42}`)},
			{ID: "c2", Name: "lookup", Arguments: json.RawMessage(`{"order_id":42}`)},
		}}}, nil
	})
	lookup := functool.MustNew("lookup", "looks an order up", func(_ context.Context, a refundArgs) (any, error) {
		lookups.Add(1)
		return map[string]any{"status": "delivered"}, nil
	})
	policy := &fsm.GuardrailPolicy{Rules: []fsm.PolicyRule{{Name: "promises", Action: fsm.PolicyReview, Pattern: regexp.MustCompile(`(?i)voucher`)}}}
	b := setupPolicy(t, &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{&approval{countingRefund(&refunds)}, lookup}}, policy)
	return reviewBundle{testBundle: b, log: log, refunds: &refunds, lookups: &lookups}
}

func (b reviewBundle) held(t *testing.T) (*fsm.Result, string) {
	t.Helper()
	res, sid := b.turn(t, "help with order 42")
	if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 2 ||
		res.Interrupts[0].Kind != events.InterruptGuardrailReview || res.Interrupts[0].Rule != "promises" ||
		!strings.Contains(string(res.Interrupts[0].Arguments), "voucher") || res.Interrupts[1].Tool != "refund" {
		t.Fatalf("result = %+v", res)
	}
	if b.refunds.Load() != 0 || b.lookups.Load() != 0 || b.log.count() != 1 {
		t.Fatalf("while held: refunds %d, lookups %d, model calls %d (want 0, 0, 1)", b.refunds.Load(), b.lookups.Load(), b.log.count())
	}
	pending, _ := b.store.PendingInterrupts(b.ctx, sid)
	if len(pending) != 2 || pending[0].Kind != events.InterruptGuardrailReview {
		t.Fatalf("pending = %+v", pending)
	}
	return res, sid
}

func decision(s string) *string { return &s }

// TestReviewApproveReleasesTheHeldResponse: the review and the approval its tool call
// needs are answered by one resume_map; approving releases the recorded response
// without calling the model again, and the turn replays.
func TestReviewApproveReleasesTheHeldResponse(t *testing.T) {
	t.Parallel()
	b := setupReview(t)
	res, sid := b.held(t)
	review, refund := res.Interrupts[0].ID, res.Interrupts[1].ID
	resume := func(answers map[string]fsm.Answer) (*fsm.Result, error) {
		st, err := b.engine.Resume(b.ctx, sid, "reviewer", answers)
		if err != nil {
			return nil, err
		}
		return st.Wait()
	}
	for _, tc := range []struct {
		answers map[string]fsm.Answer
		mention string
	}{
		{map[string]fsm.Answer{review: {Decision: decision("approve")}}, refund},
		{map[string]fsm.Answer{review: {Confirmed: yes()}, refund: {Confirmed: yes()}}, review + ".confirmed"},
		{map[string]fsm.Answer{review: {Decision: decision("maybe")}, refund: {Confirmed: yes()}}, review + ".decision"},
		{map[string]fsm.Answer{review: {Decision: decision("approve"), ReviewerNotes: decision(" ")}, refund: {Confirmed: yes()}}, "reviewer_notes"},
		{map[string]fsm.Answer{review: {Decision: decision("approve")}, refund: {Decision: decision("approve")}}, refund + ".decision"},
	} {
		if _, err := resume(tc.answers); !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), tc.mention) {
			t.Fatalf("%+v: err = %v, want invalid naming %s", tc.answers, err, tc.mention)
		}
	}
	done, err := resume(map[string]fsm.Answer{review: {Decision: decision("approve"), ReviewerNotes: decision("ok, goodwill")}, refund: {Confirmed: yes()}})
	if err != nil || done.Status != fsm.StatusCompleted || done.Output != `done: {"order_id":42} | {"status":"delivered"}` {
		t.Fatalf("approve: %+v %v", done, err)
	}
	if b.refunds.Load() != 1 || b.lookups.Load() != 1 || b.log.count() != 2 {
		t.Fatalf("after approval: refunds %d, lookups %d, model calls %d (want 1, 1, 2: the held response was not asked for again)",
			b.refunds.Load(), b.lookups.Load(), b.log.count())
	}
	again, err := resume(map[string]fsm.Answer{review: {Decision: decision("approve"), ReviewerNotes: decision("ok, goodwill")}, refund: {Confirmed: yes()}})
	if err != nil || again.Status != fsm.StatusCompleted {
		t.Fatalf("the same answers again: %+v %v", again, err)
	}
	if _, err := resume(map[string]fsm.Answer{review: {Decision: decision("reject")}, refund: {Confirmed: yes()}}); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("a different decision: err = %v, want conflict", err)
	}
	b.replayFresh(t, sid)
	if b.refunds.Load() != 1 || b.log.count() != 2 {
		t.Fatalf("replay called something: refunds %d, model calls %d", b.refunds.Load(), b.log.count())
	}
}

// TestReviewRejectFailsTheTurn: nothing the held response asked for runs, the turn
// fails with policy_denied carrying the reviewer's notes, and the next turn goes on
// from the history before it.
func TestReviewRejectFailsTheTurn(t *testing.T) {
	t.Parallel()
	b := setupReview(t)
	res, sid := b.held(t)
	st, err := b.engine.Resume(b.ctx, sid, "reviewer", map[string]fsm.Answer{
		res.Interrupts[0].ID: {Decision: decision("reject"), ReviewerNotes: decision("no vouchers this month")},
		res.Interrupts[1].ID: {Confirmed: yes()}})
	if err != nil {
		t.Fatal(err)
	}
	done, err := st.Wait()
	if err != nil || done.Status != fsm.StatusFailed || done.Error.Code != events.CodePolicyDenied || !strings.Contains(done.Error.Message, "no vouchers this month") {
		t.Fatalf("reject: %+v %v", done, err)
	}
	if b.refunds.Load() != 0 || b.lookups.Load() != 0 || b.log.count() != 1 {
		t.Fatalf("after rejection: refunds %d, lookups %d, model calls %d (want 0, 0, 1)", b.refunds.Load(), b.lookups.Load(), b.log.count())
	}
	if turn, _ := b.store.LastTurn(b.ctx, sid); turn.Status != projection.TurnFailed {
		t.Fatalf("turn status %s", turn.Status)
	}
	if h, _ := b.store.History(b.ctx, sid); len(h) != 0 {
		t.Fatalf("a rejected turn committed history %+v", h)
	}
}

func TestPolicyValidation(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`x`)
	for _, tc := range []struct {
		rule    fsm.PolicyRule
		mention string
	}{
		{fsm.PolicyRule{Action: fsm.PolicyLog, Pattern: re}, "name"},
		{fsm.PolicyRule{Name: "a", Action: "hide", Pattern: re}, "action"},
		{fsm.PolicyRule{Name: "a", Action: fsm.PolicyLog}, "pattern"},
		{fsm.PolicyRule{Name: "a", Action: fsm.PolicyLog, Pattern: re, Targets: []string{"model"}}, "applies_to[0]"},
		{fsm.PolicyRule{Name: "a", Action: fsm.PolicyReview, Pattern: re, Targets: []string{fsm.TargetToolOutput}}, "review holds a model response"},
		{fsm.PolicyRule{Name: "a", Action: fsm.PolicyRedact, Pattern: regexp.MustCompile(`R`), Replacement: "R"}, "replacement"},
	} {
		p := &fsm.GuardrailPolicy{Rules: []fsm.PolicyRule{tc.rule}}
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Fatalf("%+v: err = %v, want one naming %s", tc.rule, err, tc.mention)
		}
	}
}

// TestTheOldPolicyFieldNamesStillWork: an App built with the deprecated Policy and
// Access fields runs under them, as under GuardrailPolicy and ToolPolicy.
func TestTheOldPolicyFieldNamesStillWork(t *testing.T) {
	var runs atomic.Int64
	log := &requestLog{}
	guard := &fsm.GuardrailPolicy{Rules: []fsm.PolicyRule{{Name: "stop", Action: fsm.PolicyBlock, Pattern: regexp.MustCompile(`4111`), Targets: []string{fsm.TargetModelInput}}}}
	access := &policy.Engine{Mode: policy.ModeNetworkOff, Workspace: t.TempDir()}
	agent := &fsm.Agent{Name: "a", LLM: "m", Model: accountModel(log), Tools: []fsm.Tool{accountTool(&runs)}}
	app := &fsm.App{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": agent}, Policy: guard, Access: access}
	b := setupApp(t, app)
	if app.GuardrailPolicy != guard || app.ToolPolicy != access {
		t.Fatalf("the old fields were not taken: %p %p", app.GuardrailPolicy, app.ToolPolicy)
	}
	if res, _ := b.turn(t, "card 4111 please"); res.Status != fsm.StatusFailed || res.Error.Code != events.CodePolicyDenied || log.count() != 0 {
		t.Fatalf("the guardrail policy given as Policy did not hold: %+v", res)
	}
}
