package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// budgetedApp ("budget") answers at once, spending 40 output tokens a call of at
// most 50; its sessions may spend 60. budgetedByOperators ("budget-ops") is the same,
// its budgets extended by operators only.
func budgetedByOperators() *fsm.App {
	app := budgetedApp()
	app.Name, app.BudgetExtendBy = "budget-ops", fsm.ExtendByOperator
	return app
}

func budgetedApp() *fsm.App {
	model := modelFunc(func(fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "answered"}, Usage: events.Usage{InputTokens: 100, OutputTokens: 40}}, nil
	})
	return &fsm.App{Name: "budget", StartAgent: "a", Budgets: &fsm.Budgets{Session: &events.BudgetAmounts{OutputTokens: 60}},
		Prices: map[string]fsm.Price{"m": {Input: 1, Output: 4}},
		Agents: map[string]*fsm.Agent{"a": {Name: "a", LLM: "m", Model: model, Settings: json.RawMessage(`{"max_tokens":50}`)}}}
}

// TestABudgetOverHTTP: a turn held at its session budget is a budget interrupt in the
// turn's answer and the interrupts list, its figures shown; resume_map's extend lets
// it go on, a malformed answer is a 400 naming the field; /spend shows each budget
// against its spend, and /metrics the spend by app, agent and llm.
func TestABudgetOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "budget")
	turns := "/v1/sessions/" + id + "/turns"
	if r := b.do(t, "POST", turns, "key-alice", `{"input":"one"}`); r.body["status"] != "completed" { // 0 + 50 ≤ 60
		t.Fatalf("first turn: %s", r.raw)
	}
	r := b.do(t, "POST", turns, "key-alice", `{"input":"two"}`) // 40 + 50 > 60
	payload, _ := r.body["suspend_payload"].(map[string]any)
	if r.body["status"] != "suspended" || payload["kind"] != "budget" || !strings.Contains(r.raw, `"spent":{"cost":0.00026,"input_tokens":100,"output_tokens":40,"total_tokens":140}`) {
		t.Fatalf("second turn: %s", r.raw)
	}
	interrupt := payload["id"].(string)
	if r := b.do(t, "GET", "/v1/sessions/"+id+"/interrupts", "key-alice", ""); !strings.Contains(r.raw, `"kind":"budget"`) || !strings.Contains(r.raw, `"exceeded":["output_tokens"]`) {
		t.Fatalf("interrupts: %s", r.raw)
	}
	for body, field := range map[string]string{
		`{"resume_map":{"` + interrupt + `":{"confirmed":true}}}`:                      "confirmed",
		`{"resume_map":{"` + interrupt + `":{"extend":{}}}}`:                           "extend",
		`{"resume_map":{"` + interrupt + `":{"extend":{"output_tokens":-1}}}}`:         "extend.output_tokens",
		`{"resume_map":{"` + interrupt + `":{"extend":{"tokens":5}}}}`:                 `: must be an object such as {\"confirmed\": true}: unknown field \"tokens\"`,
		`{"resume_map":{"` + interrupt + `":{"decision":"stop","extend":{"cost":1}}}}`: "extend",
	} {
		want := `"message":"resume_map.` + interrupt + `.` + field + `: `
		if strings.HasPrefix(field, ":") {
			want = `"message":"resume_map.` + interrupt + field
		}
		if r := b.do(t, "POST", turns, "key-alice", body); r.status != 400 || !strings.Contains(r.raw, want) {
			t.Errorf("%s: %d %s, want 400 at %s", body, r.status, r.raw, field)
		}
	}
	if r := b.do(t, "POST", turns, "key-alice", `{"resume_map":{"`+interrupt+`":{"extend":{"output_tokens":100}}}}`); r.body["status"] != "completed" {
		t.Fatalf("extended: %s", r.raw)
	}
	s := b.do(t, "GET", "/v1/sessions/"+id+"/spend", "key-alice", "")
	if s.status != 200 || !strings.Contains(s.raw, `{"scope":"session","level":"app","limit":{"output_tokens":160},"spent":{"input_tokens":200,"output_tokens":80,"total_tokens":280,"cost":0.00052}}`) {
		t.Fatalf("spend: %s", s.raw)
	}
	if r := b.do(t, "GET", "/v1/sessions/"+id+"/spend", "key-bob", ""); r.status != 404 {
		t.Fatalf("another user's spend: %d %s", r.status, r.raw)
	}
	m := b.do(t, "GET", "/metrics", "", "")
	for _, want := range []string{`turnlog_spend_cost_total{agent="a",app="budget",llm="m"} 0.00052`,
		`turnlog_spend_tokens_total{agent="a",app="budget",kind="output",llm="m"} 80`,
		`turnlog_budget_reached_total{agent="a",app="budget",scope="session"} 1`} {
		if !strings.Contains(m.raw, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestOnlyAnOperatorExtendsAnOperatorsBudget: an app whose budgets operators extend
// refuses an extension from the session's owner (403 policy_denied, naming the field,
// nothing recorded) and takes one from an admin key; the owner may still stop.
func TestOnlyAnOperatorExtendsAnOperatorsBudget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	held := func(key string) (string, string) {
		id := b.newSession(t, key, "budget-ops")
		turns := "/v1/sessions/" + id + "/turns"
		b.do(t, "POST", turns, key, `{"input":"one"}`)
		r := b.do(t, "POST", turns, key, `{"input":"two"}`)
		payload, _ := r.body["suspend_payload"].(map[string]any)
		if payload["kind"] != "budget" {
			t.Fatalf("not held: %s", r.raw)
		}
		return turns, payload["id"].(string)
	}
	turns, interrupt := held("key-alice")
	extend := `{"resume_map":{"` + interrupt + `":{"extend":{"output_tokens":100}}}}`
	if r := b.do(t, "POST", turns, "key-alice", extend); r.status != 403 || !strings.Contains(r.raw, `"code":"policy_denied"`) ||
		!strings.Contains(r.raw, "resume_map."+interrupt+".extend: this app's budgets are extended by an operator only") {
		t.Fatalf("the owner extends: %d %s", r.status, r.raw)
	}
	if r := b.do(t, "GET", strings.TrimSuffix(turns, "/turns")+"/interrupts", "key-alice", ""); !strings.Contains(r.raw, `"kind":"budget"`) {
		t.Fatalf("a refused extension changed the question: %s", r.raw)
	}
	if r := b.do(t, "POST", turns, "key-alice", `{"resume_map":{"`+interrupt+`":{"decision":"stop"}}}`); r.body["status"] != "canceled" {
		t.Fatalf("the owner stops: %s", r.raw)
	}
	turns, interrupt = held("key-root")
	if r := b.do(t, "POST", turns, "key-root", `{"resume_map":{"`+interrupt+`":{"extend":{"output_tokens":100}}}}`); r.body["status"] != "completed" {
		t.Fatalf("an admin extends: %s", r.raw)
	}
}
