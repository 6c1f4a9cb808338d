package fsm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// toolThenAnswer calls echo on each of its first `tools` calls of a turn, then
// answers; every call reports usage.
func toolThenAnswer(tools int, usage events.Usage, calls *atomic.Int64) fsm.Model {
	return modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		calls.Add(1)
		outputs := 0
		for _, it := range r.Items {
			if it.Type == events.ItemMessage && it.Role == "user" {
				outputs = 0
			}
			if it.Type == events.ItemFunctionCallOutput {
				outputs++
			}
		}
		if outputs < tools {
			return fsm.ModelResponse{Usage: usage, ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
				{ID: fmt.Sprint("c", outputs+1), Name: "echo", Arguments: []byte(fmt.Sprintf(`{"n":%d}`, outputs+1))}}}}, nil
		}
		return fsm.ModelResponse{Usage: usage, ModelResponse: events.ModelResponse{Text: fmt.Sprintf("done after %d", outputs)}}, nil
	})
}

// budgetApp is an app of one agent "a" with max_tokens 50 and the given budgets.
func budgetApp(model fsm.Model, app, agent *fsm.Budgets) *fsm.App {
	ag := &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{echoTool()}, Settings: json.RawMessage(`{"max_tokens":50}`), Budgets: agent}
	return &fsm.App{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": ag}, Budgets: app,
		Prices: map[string]fsm.Price{"m": {Input: 2.5, CachedInput: 1.25, Output: 10}}}
}

// budgetQuestion decodes a held turn's one budget interrupt.
func budgetQuestion(t *testing.T, res *fsm.Result) (fsm.Interrupt, projection.BudgetFigures) {
	t.Helper()
	if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 || res.Interrupts[0].Kind != events.InterruptBudget {
		t.Fatalf("result = %+v %v, want suspended on one budget interrupt", res, res.Error)
	}
	var f projection.BudgetFigures
	if err := json.Unmarshal(res.Interrupts[0].Arguments, &f); err != nil {
		t.Fatal(err)
	}
	return res.Interrupts[0], f
}

func (b testBundle) resumeWith(t *testing.T, sid string, answers map[string]fsm.Answer) *fsm.Result {
	t.Helper()
	st, err := b.engine.Resume(b.ctx, sid, "reviewer", answers)
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// paths lists the session's events of the given types as type@path.
func paths(t *testing.T, b testBundle, sid string, types ...string) string {
	t.Helper()
	evs, err := b.store.Events(b.ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		for _, typ := range types {
			if ev.Type == typ {
				out = append(out, ev.Type+"@"+ev.Path)
			}
		}
	}
	return strings.Join(out, " ")
}

// TestATurnHeldAtItsTokenBudgetGoesOnWithAnExtension: a turn whose next call would
// pass its output budget (what its calls spent plus the most the next may answer)
// waits before the call with a budget interrupt showing the figures; an extension
// lets it go on without repeating a call or a tool, and the log replays.
func TestATurnHeldAtItsTokenBudgetGoesOnWithAnExtension(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	b := setupApp(t, budgetApp(toolThenAnswer(3, events.Usage{InputTokens: 100, OutputTokens: 20}, &calls),
		&fsm.Budgets{Turn: &events.BudgetAmounts{OutputTokens: 100}}, nil))
	res, sid := b.turn(t, "go")
	q, f := budgetQuestion(t, res)
	// Calls 1–3 fit (0, 20, 40 spent + 50 ≤ 100); the fourth would not (60 + 50).
	if calls.Load() != 3 || f.Scope != "turn" || f.Level != "app" || f.Spent.OutputTokens != 60 || f.Request.OutputTokens != 50 ||
		f.Limit.OutputTokens != 100 || strings.Join(f.Exceeded, ",") != "output_tokens" || q.Path != "a/model/4/budget" {
		t.Fatalf("held after %d calls: %+v at %s", calls.Load(), f, q.Path)
	}
	pending, err := b.store.PendingInterrupts(b.ctx, sid)
	if err != nil || len(pending) != 1 || pending[0].Kind != events.InterruptBudget || pending[0].Reason == "" {
		t.Fatalf("pending = %+v, %v", pending, err)
	}
	done := b.resumeWith(t, sid, map[string]fsm.Answer{q.ID: {Extend: &events.BudgetAmounts{OutputTokens: 50}}})
	if done.Status != fsm.StatusCompleted || done.Output != "done after 3" || calls.Load() != 4 {
		t.Fatalf("after the extension: %+v %v, %d calls", done, done.Error, calls.Load())
	}
	if got := paths(t, b, sid, events.TypeBudgetReached, events.TypeBudgetResolved); got != "BudgetReached@a/model/4/budget BudgetResolved@a/model/4/budget" {
		t.Errorf("budget events: %s", got)
	}
	b.replayFresh(t, sid)
}

// TestAnExtensionTooSmallAsksAgainAndStopEndsTheTurn: an extension that does not cover
// the call is met by a second question at /budget/2; stop ends the turn canceled,
// naming who stopped it, and the call is never made.
func TestAnExtensionTooSmallAsksAgainAndStopEndsTheTurn(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	b := setupApp(t, budgetApp(toolThenAnswer(3, events.Usage{InputTokens: 100, OutputTokens: 20}, &calls),
		&fsm.Budgets{Turn: &events.BudgetAmounts{OutputTokens: 100}}, nil))
	res, sid := b.turn(t, "go")
	q, _ := budgetQuestion(t, res)
	again := b.resumeWith(t, sid, map[string]fsm.Answer{q.ID: {Extend: &events.BudgetAmounts{OutputTokens: 5}}})
	q2, f2 := budgetQuestion(t, again)
	if q2.Path != "a/model/4/budget/2" || f2.Limit.OutputTokens != 105 || calls.Load() != 3 {
		t.Fatalf("asked again at %s with %+v after %d calls", q2.Path, f2, calls.Load())
	}
	stop := events.BudgetStop
	end := b.resumeWith(t, sid, map[string]fsm.Answer{q2.ID: {Decision: &stop}})
	if end.Status != fsm.StatusCanceled || !strings.Contains(end.Error.Message, "reviewer stopped the turn at its budget") || calls.Load() != 3 {
		t.Fatalf("after stop: %+v %v, %d calls", end, end.Error, calls.Load())
	}
	b.replayFresh(t, sid)
}

// TestBudgetAnswersAreChecked: a budget question takes extend or stop; anything else
// is a typed error naming the field, and changes nothing.
func TestBudgetAnswersAreChecked(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	b := setupApp(t, budgetApp(toolThenAnswer(3, events.Usage{OutputTokens: 20}, &calls),
		&fsm.Budgets{Turn: &events.BudgetAmounts{OutputTokens: 60}}, nil))
	res, sid := b.turn(t, "go")
	q, _ := budgetQuestion(t, res)
	approve, odd := "approve", "later"
	for _, tc := range []struct {
		answer fsm.Answer
		field  string
	}{
		{fsm.Answer{Confirmed: yes()}, "confirmed"},
		{fsm.Answer{}, "extend"},
		{fsm.Answer{Extend: &events.BudgetAmounts{}}, "extend"},
		{fsm.Answer{Extend: &events.BudgetAmounts{OutputTokens: -5}}, "extend.output_tokens"},
		{fsm.Answer{Decision: &approve}, "decision"},
		{fsm.Answer{Decision: &odd, Extend: &events.BudgetAmounts{Cost: 1}}, "decision"},
		{fsm.Answer{Extend: &events.BudgetAmounts{OutputTokens: 1e16}}, "extend.output_tokens"},
		{fsm.Answer{Extend: &events.BudgetAmounts{InputTokens: 5}}, "extend.input_tokens"},
		{fsm.Answer{Extend: &events.BudgetAmounts{OutputTokens: 5, Cost: 1e300}}, "extend.cost"},
		{fsm.Answer{Extend: &events.BudgetAmounts{Cost: 1e-12}}, "extend"}, // below what a cost keeps: nothing
	} {
		_, err := b.engine.Resume(b.ctx, sid, "r", map[string]fsm.Answer{q.ID: tc.answer})
		var ee *events.Error
		if !events.IsCode(err, events.CodeInvalid) || !errors.As(err, &ee) || ee.Field != "resume_map."+q.ID+"."+tc.field {
			t.Errorf("answer %+v: err = %v, want invalid at %s", tc.answer, err, tc.field)
		}
	}
	if got := paths(t, b, sid, events.TypeBudgetResolved, events.TypeTurnResumed); got != "" {
		t.Fatalf("a refused answer was recorded: %s", got)
	}
}

// TestCostIsCountedFromThePriceTable: each call records its cost from the llm's
// price (cached input at its own price), the spend read model sums it, and a cost
// budget holds the call that would pass it with the spent figure a hand computation
// gives.
func TestCostIsCountedFromThePriceTable(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	usage := events.Usage{InputTokens: 1000, CachedTokens: 400, OutputTokens: 200}
	b := setupApp(t, budgetApp(toolThenAnswer(5, usage, &calls), &fsm.Budgets{Session: &events.BudgetAmounts{Cost: 0.01}}, nil))
	res, sid := b.turn(t, "go")
	// (600 × 2.5 + 400 × 1.25 + 200 × 10) / 1e6 = 0.004 a call: three fit under 0.01
	// (each call may cost up to 50 × 10 / 1e6 of output and its input), the fourth not.
	const perCall = (600*2.5 + 400*1.25 + 200*10) / 1e6
	_, f := budgetQuestion(t, res)
	if calls.Load() != 3 || f.Spent.Cost != 3*perCall || strings.Join(f.Exceeded, ",") != "cost" || f.Request.Cost <= 50*10/1e6 {
		t.Fatalf("held after %d calls with %+v (want spent %v)", calls.Load(), f, 3*perCall)
	}
	evs, err := b.store.Events(b.ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeModelCalled {
			mc, _ := events.DecodeAs[*events.ModelCalled](ev)
			if mc.Cost != perCall {
				t.Errorf("%s cost %v, want %v", ev.Path, mc.Cost, perCall)
			}
		}
	}
	spend, err := b.store.Spend(b.ctx, projection.SpendQuery{Session: sid, App: "test", Owner: "alice", Day: "2026-01-02"})
	if err != nil || spend.Session["a"].Calls != 3 || spend.Session["a"].Cost != 3*perCall || spend.Day["a"].Usage.CachedTokens != 1200 {
		t.Fatalf("spend = %+v, %v", spend, err)
	}
}

// TestADayBudgetCountsEverySessionOfTheUser: a user_day budget counts the owner's
// calls in all their sessions of the app that day (another user's not), read from
// the store by a new engine as well; a session extension of it lasts for the day.
func TestADayBudgetCountsEverySessionOfTheUser(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	app := budgetApp(toolThenAnswer(0, events.Usage{InputTokens: 10, OutputTokens: 40}, &calls), &fsm.Budgets{UserDay: &events.BudgetAmounts{OutputTokens: 100}}, nil)
	b := setupApp(t, app)
	session := func(e *fsm.Engine, owner string) string {
		s, err := e.CreateSession(b.ctx, "test", owner, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	run := func(e *fsm.Engine, sid string) *fsm.Result {
		res, err := e.RunTurn(b.ctx, sid, "hi")
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, second, bobs := session(b.engine, "alice"), session(b.engine, "alice"), session(b.engine, "bob")
	for _, sid := range []string{first, second, bobs} { // alice 0+50, 40+50; bob 0+50
		if res := run(b.engine, sid); res.Status != fsm.StatusCompleted {
			t.Fatalf("%s: %+v %v", sid, res, res.Error)
		}
	}
	res := run(b.engine, first) // alice: 80 + 50 > 100
	q, f := budgetQuestion(t, res)
	if f.Scope != "user_day" || f.Day != "2026-01-02" || f.Spent.OutputTokens != 80 {
		t.Fatalf("held with %+v", f)
	}
	done := b.resumeWith(t, first, map[string]fsm.Answer{q.ID: {Extend: &events.BudgetAmounts{OutputTokens: 100}}})
	if done.Status != fsm.StatusCompleted {
		t.Fatalf("after the extension: %+v %v", done, done.Error)
	}
	// A new engine on the same store reads the day: 120 spent, 200 allowed now.
	e2, err := fsm.New(b.store, []*fsm.App{budgetApp(toolThenAnswer(0, events.Usage{OutputTokens: 40}, &calls),
		&fsm.Budgets{UserDay: &events.BudgetAmounts{OutputTokens: 100}}, nil)}, fsm.Options{Clock: testClock, NewID: counterIDs("e2")})
	if err != nil {
		t.Fatal(err)
	}
	if res := run(e2, second); res.Status != fsm.StatusCompleted { // 120 + 50 ≤ 200
		t.Fatalf("within the extended day: %+v %v", res, res.Error)
	}
	_, f = budgetQuestion(t, run(e2, second)) // 160 + 50 > 200
	if f.Spent.OutputTokens != 160 || f.Limit.OutputTokens != 200 {
		t.Fatalf("held with %+v", f)
	}
}

// TestAStricterBudgetAppliesOnResume: a turn held at its budget and resumed under a
// config whose budget is stricter meets the stricter one (asked again, recorded); an
// agent's budget counts only its own calls.
func TestAStricterBudgetAppliesOnResume(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	model := toolThenAnswer(3, events.Usage{OutputTokens: 20}, &calls)
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: testClock, Synchronous: "OFF"})
	e1, err := fsm.New(store, []*fsm.App{budgetApp(model, nil, &fsm.Budgets{Turn: &events.BudgetAmounts{OutputTokens: 100}})},
		fsm.Options{Clock: testClock, NewID: counterIDs("id")})
	if err != nil {
		t.Fatal(err)
	}
	b := testBundle{ctx: t.Context(), store: store, engine: e1}
	res, sid := b.turn(t, "go")
	q, f := budgetQuestion(t, res)
	if f.Level != "agent" || f.Agent != "a" {
		t.Fatalf("held by %+v", f)
	}
	e2, err := fsm.New(store, []*fsm.App{budgetApp(model, nil, &fsm.Budgets{Turn: &events.BudgetAmounts{OutputTokens: 40}})},
		fsm.Options{Clock: testClock, NewID: counterIDs("id2")})
	if err != nil {
		t.Fatal(err)
	}
	b.engine = e2
	// 60 spent; 100 + 50 would have let the call go, 40 + 50 does not.
	again := b.resumeWith(t, sid, map[string]fsm.Answer{q.ID: {Extend: &events.BudgetAmounts{OutputTokens: 50}}})
	q2, f2 := budgetQuestion(t, again)
	if q2.Path != "a/model/4/budget/2" || f2.Limit.OutputTokens != 90 || calls.Load() != 3 {
		t.Fatalf("under the stricter budget: %s %+v after %d calls", q2.Path, f2, calls.Load())
	}
}

// TestABudgetDayIsInItsTimeZone: with a budget time zone, a call records the day it
// counts to there (03:04 UTC on 2 January is still 1 January in Los Angeles), the
// spend read model counts it to that day, and a user-day budget is that day's.
func TestABudgetDayIsInItsTimeZone(t *testing.T) {
	t.Parallel()
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	app := budgetApp(toolThenAnswer(1, events.Usage{OutputTokens: 20}, &calls), &fsm.Budgets{UserDay: &events.BudgetAmounts{OutputTokens: 60}}, nil)
	app.BudgetZone = la
	b := setupApp(t, app)
	res, sid := b.turn(t, "go") // 0 + 50, then 20 + 50 > 60
	_, f := budgetQuestion(t, res)
	if f.Day != "2026-01-01" || f.Spent.OutputTokens != 20 {
		t.Fatalf("held with %+v", f)
	}
	evs, err := b.store.Events(b.ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeModelCalled {
			if mc, _ := events.DecodeAs[*events.ModelCalled](ev); mc.Day != "2026-01-01" {
				t.Fatalf("the call counts to %q", mc.Day)
			}
		}
	}
	spend, err := b.store.Spend(b.ctx, projection.SpendQuery{Session: sid, App: "test", Owner: "alice", Day: "2026-01-01"})
	if err != nil || spend.Day["a"].Calls != 1 {
		t.Fatalf("the day's spend: %+v %v", spend, err)
	}
}

// TestANestedAgentsBudgetHoldsTheTurn: a budget of an agent used as a tool holds the
// whole turn at the nested call (its path under the caller's); an extension lets the
// nested agent answer its caller, and a stop ends the turn canceled, as at a budget
// of the turn's own agent. Both replay.
func TestANestedAgentsBudgetHoldsTheTurn(t *testing.T) {
	t.Parallel()
	for _, stop := range []bool{false, true} {
		ra := newResearchApp(0)
		ra.app.Agents["lead"].AgentTools = []fsm.AgentTool{{Agent: "researcher", Name: "research"}}
		ra.app.Agents["researcher"].Settings = json.RawMessage(`{"max_tokens":10}`)
		ra.app.Agents["researcher"].Budgets = &fsm.Budgets{Turn: &events.BudgetAmounts{OutputTokens: 5}}
		b := setupApp(t, ra.app)
		res, sid := b.turn(t, "look into it")
		if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 2 {
			t.Fatalf("result = %+v %v, want two budget questions (one per nested run)", res, res.Error)
		}
		answers := map[string]fsm.Answer{}
		for _, q := range res.Interrupts {
			if q.Kind != events.InterruptBudget || !strings.HasPrefix(q.Path, "lead/tool/r") || !strings.HasSuffix(q.Path, "/researcher/model/1/budget") {
				t.Fatalf("question %+v", q)
			}
			decision := events.BudgetStop
			answers[q.ID] = fsm.Answer{Decision: &decision}
			if !stop {
				answers[q.ID] = fsm.Answer{Extend: &events.BudgetAmounts{OutputTokens: 100}}
			}
		}
		end := b.resumeWith(t, sid, answers)
		switch {
		case stop && (end.Status != fsm.StatusCanceled || !strings.Contains(end.Error.Message, "stopped the turn at its budget")):
			t.Fatalf("stopped: %+v %v", end, end.Error)
		case !stop && (end.Status != fsm.StatusCompleted || end.Output != "notes on topic A | notes on topic B"):
			t.Fatalf("extended: %+v %v", end, end.Error)
		}
		b.replayFresh(t, sid)
	}
}

// TestAJudgesCallsCountToTheBudget: a guardrail judge's model call costs like any
// other: it records its cost, counts to the turn's budget (under the guardrail's
// name) and to the spend read model.
func TestAJudgesCallsCountToTheBudget(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	judge := modelFunc(func(fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "PASS"}, Usage: events.Usage{InputTokens: 10, OutputTokens: 40}}, nil
	})
	app := budgetApp(toolThenAnswer(1, events.Usage{OutputTokens: 20}, &calls), &fsm.Budgets{Turn: &events.BudgetAmounts{OutputTokens: 100}}, nil)
	app.Agents["a"].InputGuardrails = []fsm.Guardrail{{Name: "topic", Kind: fsm.GuardrailLLMJudge, LLM: "m", Model: judge,
		Instructions: "Say PASS", PassIf: regexp.MustCompile("^PASS")}}
	b := setupApp(t, app)
	// The judge spent 40: the first call fits (40 + 50), the second not (60 + 50 > 100).
	res, sid := b.turn(t, "go")
	_, f := budgetQuestion(t, res)
	if f.Spent.OutputTokens != 60 || calls.Load() != 1 {
		t.Fatalf("held with %+v after %d calls", f, calls.Load())
	}
	spend, err := b.store.Spend(b.ctx, projection.SpendQuery{Session: sid, App: "test", Owner: "alice", Day: "2026-01-02"})
	if err != nil || spend.Session["topic"].Usage.OutputTokens != 40 || spend.Session["topic"].Cost != (10*2.5+40*10)/1e6 {
		t.Fatalf("the judge's spend: %+v %v", spend.Session, err)
	}
}

// TestErasingASessionKeepsItsSpendInTheDay: erasing a session takes its content but
// not what it spent from its owner's day (an owner cannot reset a day budget by
// erasing); erasing the user takes that too.
func TestErasingASessionKeepsItsSpendInTheDay(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	b := setupApp(t, budgetApp(toolThenAnswer(0, events.Usage{OutputTokens: 20}, &calls), &fsm.Budgets{UserDay: &events.BudgetAmounts{OutputTokens: 1000}}, nil))
	res, sid := b.turn(t, "go")
	if res.Status != fsm.StatusCompleted {
		t.Fatalf("%+v %v", res, res.Error)
	}
	day := func() int64 {
		t.Helper()
		sp, err := b.store.Spend(b.ctx, projection.SpendQuery{Session: "none", App: "test", Owner: "alice", Day: "2026-01-02"})
		if err != nil {
			t.Fatal(err)
		}
		return sp.Day["a"].Usage.OutputTokens
	}
	if _, err := b.engine.EraseSession(b.ctx, sid, "alice", false); err != nil {
		t.Fatal(err)
	}
	if got := day(); got != 20 {
		t.Fatalf("after the session's erasure the day holds %d output tokens, want 20", got)
	}
	if _, err := b.engine.EraseUser(b.ctx, "alice", "admin"); err != nil {
		t.Fatal(err)
	}
	if got := day(); got != 0 {
		t.Fatalf("after the user's erasure the day holds %d output tokens, want 0", got)
	}
}

// TestACallWithoutMaxTokensIsTakenAtTheOutputEstimate: a check takes a call whose
// settings set no max_tokens to answer the budgets' output estimate (the agent's,
// else the app's, else 4096).
func TestACallWithoutMaxTokensIsTakenAtTheOutputEstimate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		app, agent int64
		want       int64
	}{{"the agent's", 300, 200, 200}, {"the app's", 300, 0, 300}, {"the default", 0, 0, fsm.DefaultOutputEstimate}} {
		var calls atomic.Int64
		app := budgetApp(toolThenAnswer(1, events.Usage{OutputTokens: 20}, &calls), &fsm.Budgets{Turn: &events.BudgetAmounts{OutputTokens: 1}, OutputEstimate: tc.app}, nil)
		app.Agents["a"].Settings = nil
		if tc.agent > 0 {
			app.Agents["a"].Budgets = &fsm.Budgets{OutputEstimate: tc.agent}
		}
		b := setupApp(t, app)
		res, _ := b.turn(t, "go")
		if _, f := budgetQuestion(t, res); f.Request.OutputTokens != tc.want || calls.Load() != 0 {
			t.Errorf("%s: the call is taken at %d output tokens, want %d", tc.name, f.Request.OutputTokens, tc.want)
		}
	}
}
