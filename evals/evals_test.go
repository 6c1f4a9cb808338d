package evals_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	junit "github.com/joshdk/go-junit"
	"github.com/turnlog/turnlog/evals"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// runSuite runs the demo's suite on a fresh log under config.
func runSuite(t *testing.T, config []byte, runID string) *evals.Report {
	t.Helper()
	suite, err := evals.ReadSuite(filepath.Join("..", "examples", "demo", "eval.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "eval.db")
	tl, err := turnlog.Open(context.Background(), turnlog.Options{DB: db, Synchronous: "OFF",
		ConfigData: config, Functions: demo.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	rep, err := (&evals.Runner{Engine: tl.Engine, Log: tl.Store, RunID: runID}).Run(context.Background(), suite)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, tl, rep)
	// The eval_results view, as sqlite3 reads it.
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var rows, passed int
	if err := conn.QueryRow(`SELECT count(*), coalesce(sum(passed), 0) FROM eval_results WHERE run_id = ?`, runID).Scan(&rows, &passed); err != nil {
		t.Fatal(err)
	}
	wantRuns, wantPassed := 0, 0
	for _, c := range rep.Cases {
		wantRuns, wantPassed = wantRuns+c.Runs, wantPassed+c.Passes
	}
	if rows != wantRuns || passed != wantPassed {
		t.Fatalf("eval_results: %d rows, %d passed; want %d and %d", rows, passed, wantRuns, wantPassed)
	}
	// Every run is a session of its own, tagged with the run and its case.
	for _, c := range rep.Cases {
		if len(c.Sessions) != c.Runs {
			t.Fatalf("case %s: %d sessions for %d runs", c.Name, len(c.Sessions), c.Runs)
		}
		s, err := tl.Store.Session(context.Background(), c.Sessions[0])
		if err != nil || !strings.Contains(string(s.Metadata), `"eval_case":"`+c.Name+`"`) || !strings.Contains(string(s.Metadata), `"eval_run":"`+runID+`"`) {
			t.Fatalf("case %s's session: %s %v", c.Name, s.Metadata, err)
		}
	}
	return rep
}

// TestTheDemoSuitePasses: the demo's suite passes on the demo, every case in every
// run, offline.
func TestTheDemoSuitePasses(t *testing.T) {
	t.Parallel()
	rep := runSuite(t, demo.Config, "run-1")
	if !rep.Passed || len(rep.Cases) != 7 {
		var b bytes.Buffer
		rep.Table(&b)
		t.Fatalf("the demo suite:\n%s", b.String())
	}
	for _, c := range rep.Cases {
		if c.Runs != 2 || c.Passes != 2 || c.Tokens == 0 {
			t.Errorf("case %+v", c)
		}
	}
}

// TestABrokenAgentFailsItsCases: a demo whose answer about an order's status is
// broken fails exactly the cases that check it; the comparison with a run of the
// working demo names them; the JUnit report says so to a JUnit reader.
func TestABrokenAgentFailsItsCases(t *testing.T) {
	t.Parallel()
	good := runSuite(t, demo.Config, "run-good")
	broken := strings.Replace(string(demo.Config), `reply: "Order {{output.order_id}} is {{output.status}} (carrier {{output.carrier}}), expected on {{output.eta}}."`,
		`reply: "Your parcel is on its way."`, 1)
	if broken == string(demo.Config) {
		t.Fatal("the demo's lookup reply moved: update this test")
	}
	rep := runSuite(t, []byte(broken), "run-broken")
	var failed []string
	for _, c := range rep.Cases {
		if !c.Passed {
			failed = append(failed, c.Name)
		}
	}
	if rep.Passed || strings.Join(failed, ",") != "order status" {
		var b bytes.Buffer
		rep.Table(&b)
		t.Fatalf("failed %v, want [order status]:\n%s", failed, b.String())
	}
	regs := rep.Compare(good, 0, 0.2)
	if len(regs) != 1 || regs[0].Case != "order status" || regs[0].Reason != "pass rate 100% → 0%" {
		t.Fatalf("regressions: %+v", regs)
	}
	// The JSON report reads back as a baseline.
	raw, _ := json.Marshal(good)
	var back evals.Report
	if err := json.Unmarshal(raw, &back); err != nil || len(rep.Compare(&back, 0, 0.2)) != 1 {
		t.Fatalf("the JSON report as a baseline: %v", err)
	}
	x := validJUnit(t, rep)
	suites, err := junit.Ingest(x)
	if err != nil || len(suites) != 1 {
		t.Fatalf("a JUnit reader: %v\n%s", err, x)
	}
	s := suites[0]
	if s.Totals.Tests != 7 || s.Totals.Failed != 1 || s.Totals.Passed != 6 || s.Properties["run_id"] != "run-broken" ||
		s.Properties["order status.runs"] != "2" || s.Properties["order status.passes"] != "0" {
		t.Fatalf("the JUnit totals: %+v %v\n%s", s.Totals, s.Properties, x)
	}
	for _, tc := range s.Tests {
		if (tc.Name == "order status") != (tc.Status == junit.StatusFailed) || tc.Classname != "demo" {
			t.Errorf("test %s: %s", tc.Name, tc.Status)
		}
		if tc.Name == "order status" && (tc.Message != "0 of 2 runs passed (100% needed)" || tc.Error == nil || !strings.Contains(tc.Error.Error(), `contains "shipped"`) ||
			!strings.Contains(tc.Error.Error(), `judge "The answer gives the order's status and its carrier, and guesses nothing.": scripted-judge answered "FAIL\nThe answer does not give`)) {
			t.Errorf("the failure: %q, %v", tc.Message, tc.Error)
		}
	}
}

// TestASuiteIsChecked: a suite with an unknown key, a case without input, a check of
// nothing or of two things, or a regular expression that does not compile is refused,
// naming where.
func TestASuiteIsChecked(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"app: demo\ncases: [{name: a, input: x, expect: [{contain: y}]}]":                   "contain",
		"app: demo\ncases: [{name: a}]":                                                     "cases[0].input: is required",
		"app: demo\ncases: [{name: a, input: x, expect: [{}]}]":                             "cases[0].expect[0]: sets no expectation",
		"app: demo\ncases: [{name: a, input: x, expect: [{contains: y, matches: z}]}]":      "cases[0].expect[0]: sets 2 expectations",
		"app: demo\ncases: [{name: a, input: x, expect: [{matches: '(('}]}]":                "cases[0].expect[0].matches",
		"app: demo\ncases: [{name: a, input: x}, {name: a, input: y}]":                      "cases[1].name",
		"cases: [{name: a, input: x}]":                                                      "app: is required",
		"app: demo\ncases: [{name: a, input: x, approve: [{tool: t, answer: maybe}]}]":      "cases[0].approve[0]",
		"app: demo\ncases: [{name: a, input: x, pass_rate: 2}]":                             "cases[0].pass_rate",
		"app: demo\ncases: [{name: a, input: x, expect: [{tool_called: {arguments: {}}}]}]": "tool_called.name",
	} {
		if _, err := evals.DecodeSuite([]byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %s", src, err, want)
		}
	}
}

// checkRecord: the run's own log holds a result for every run of every case, which
// the eval_results view shows and a rebuild folds the same; the log replays.
func checkRecord(t *testing.T, tl *turnlog.Turnlog, rep *evals.Report) {
	t.Helper()
	ctx := context.Background()
	evs, err := tl.Store.Events(ctx, evals.LogSession(rep.RunID), 0)
	if err != nil {
		t.Fatal(err)
	}
	runs, judged := 0, 0
	for _, c := range rep.Cases {
		runs += c.Runs
	}
	for _, ev := range evs {
		if ev.Type == events.TypeEvalJudged {
			judged++
		}
	}
	if len(evs) != runs+judged+3 || judged != wantVerdicts(t, rep) || evs[1].Type != events.TypeEvalRunStarted || evs[len(evs)-1].Type != events.TypeEvalRunEnded {
		t.Fatalf("the eval run's log holds %d events, %d verdicts (want %d runs and %d verdicts)", len(evs), judged, runs, wantVerdicts(t, rep))
	}
	type folds interface {
		Rebuild(ctx context.Context) (int64, error)
		DumpProjections(ctx context.Context) (string, error)
	}
	f := tl.Store.(folds)
	before, err := f.DumpProjections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(before, " | "+rep.RunID+" | "); n != runs {
		t.Fatalf("eval results for run %s: %d rows, want %d", rep.RunID, n, runs)
	}
	if _, err := f.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if after, err := f.DumpProjections(ctx); err != nil || after != before {
		t.Fatalf("the read models after a rebuild differ: %v", err)
	}
}

// wantVerdicts is how many verdicts the demo suite's judged checks give in rep: one
// a run of a case that has one.
func wantVerdicts(t *testing.T, rep *evals.Report) int {
	t.Helper()
	suite, err := evals.ReadSuite(filepath.Join("..", "examples", "demo", "eval.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range suite.Cases {
		for _, ch := range c.Expect {
			if ch.Judge == nil {
				continue
			}
			for _, cr := range rep.Cases {
				if cr.Name == c.Name {
					n += cr.Runs
				}
			}
		}
	}
	return n
}

// TestASuiteBuiltInCodeRuns: a suite made in Go, not decoded — no parallel set, a
// regular expression not compiled — runs as a decoded one does.
func TestASuiteBuiltInCodeRuns(t *testing.T) {
	t.Parallel()
	tl, err := turnlog.Open(context.Background(), turnlog.Options{DB: filepath.Join(t.TempDir(), "eval.db"), Synchronous: "OFF",
		ConfigData: demo.Config, Functions: demo.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	suite := &evals.Suite{Name: "code", App: "demo", Cases: []evals.Case{{Name: "status", Input: "where is order 42?",
		Expect: []evals.Check{{Matches: `Order 42 is \w+`}, {ToolCalled: &evals.ToolCheck{Name: "lookup_order"}}}}}}
	rep, err := (&evals.Runner{Engine: tl.Engine, Log: tl.Store, RunID: "code-run"}).Run(context.Background(), suite)
	if err != nil || !rep.Passed || rep.Cases[0].Runs != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
}

// turnOnTheLog is a Log that, before the run's first case result, runs a turn on the
// run's own log as anyone with its owner's rights could: the log moves past what the
// runner last appended.
type turnOnTheLog struct {
	evals.Log
	tl   *turnlog.Turnlog
	once sync.Once
	err  error
}

func (l *turnOnTheLog) Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error) {
	if evs[len(evs)-1].Type == events.TypeEvalCaseRun {
		l.once.Do(func() { _, l.err = l.tl.Engine.RunTurn(ctx, session, "hello") })
	}
	return l.Log.Append(ctx, session, after, evs)
}

// TestATurnOnTheRunsLogDoesNotStopTheRun: a turn run on the eval run's own log while
// the run goes on is appended there, and the run's results after it.
func TestATurnOnTheRunsLogDoesNotStopTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(t.TempDir(), "eval.db"), Synchronous: "OFF", ConfigData: demo.Config, Functions: demo.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	log := &turnOnTheLog{Log: tl.Store, tl: tl}
	suite := &evals.Suite{Name: "intruded", App: "demo", Parallel: 1, Cases: []evals.Case{{Name: "a", Input: "where is order 42?", Runs: 3,
		Expect: []evals.Check{{Contains: "shipped"}}}}}
	rep, err := (&evals.Runner{Engine: tl.Engine, Log: log, RunID: "intruded"}).Run(ctx, suite)
	if err != nil || log.err != nil || !rep.Passed {
		t.Fatalf("the run: %v; the turn on its log: %v", err, log.err)
	}
	evs, err := tl.Store.Events(ctx, evals.LogSession("intruded"), 0)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, ev := range evs {
		types[ev.Type]++
	}
	if types[events.TypeTurnCommitted] != 1 || types[events.TypeEvalCaseRun] != 3 || evs[len(evs)-1].Type != events.TypeEvalRunEnded {
		t.Fatalf("the run's log: %v", types)
	}
	back, err := evals.ReportOf(ctx, tl.Store, "intruded")
	if err != nil || !back.Passed || back.Cases[0].Passes != 3 {
		t.Fatalf("the run read back: %+v %v", back, err)
	}
}
