package evals_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/evals"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// countedModel counts the calls of a model; refusing, it fails them instead.
type countedModel struct {
	fsm.Model
	calls  *atomic.Int64
	refuse bool
}

func (m countedModel) Call(ctx context.Context, req fsm.ModelRequest) (fsm.ModelResponse, error) {
	m.calls.Add(1)
	if m.refuse {
		return fsm.ModelResponse{}, errors.New("this engine calls no model")
	}
	return m.Model.Call(ctx, req)
}

// evalEngine opens the demo on a fresh log, its models counted by llm (refused when
// refuse is set).
func evalEngine(t *testing.T, refuse bool) (*turnlog.Turnlog, string, func(llm string) int64) {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]*atomic.Int64{}
	db := filepath.Join(t.TempDir(), "eval.db")
	tl, err := turnlog.Open(context.Background(), turnlog.Options{DB: db, Synchronous: "OFF", ConfigData: demo.Config, Functions: demo.Functions(),
		WrapModel: func(llm string, m fsm.Model) fsm.Model {
			mu.Lock()
			defer mu.Unlock()
			if counts[llm] == nil {
				counts[llm] = &atomic.Int64{}
			}
			return countedModel{Model: m, calls: counts[llm], refuse: refuse}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	return tl, db, func(llm string) int64 {
		mu.Lock()
		defer mu.Unlock()
		if counts[llm] == nil {
			return 0
		}
		return counts[llm].Load()
	}
}

// demoSuite is the demo's suite with its text edited (old → new, in order).
func demoSuite(t *testing.T, edits ...string) *evals.Suite {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "demo", "eval.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	raw := string(data)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(raw, edits[i]) {
			t.Fatalf("the demo suite has no %q: update this test", edits[i])
		}
		raw = strings.Replace(raw, edits[i], edits[i+1], 1)
	}
	s, err := evals.DecodeSuite([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	s.Name = "demo"
	return s
}

// TestARecordedSuiteIsCheckedAgainWithoutAModel: a suite run with Record gives a
// recording; a later run with it as Replay — on another log, whose every model
// fails — checks the recordings again with the suite's checks as they are now: a
// changed check changes the result and calls nothing; a judged check whose rubric
// changed needs a judge (not passed, not failed; so in the log, the eval_results view
// and JUnit; no regression against a baseline) until AllowJudge calls the judge,
// once a run; a second check with the same request has no verdict of its own; a
// recording of that run replays with no call; a changed pass_if is applied to the recorded verdict; a case
// the recording lacks, or ran with other inputs, is refused by name.
func TestARecordedSuiteIsCheckedAgainWithoutAModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	live, _, liveCalls := evalEngine(t, false)
	rep, err := (&evals.Runner{Engine: live.Engine, Log: live.Store, RunID: "recorded", Record: true}).Run(ctx, demoSuite(t))
	if err != nil || !rep.Passed || rep.Recording() == nil || liveCalls("scripted-judge") != 2 {
		t.Fatalf("the recorded run: passed %v, %v, judge calls %d", rep.Passed, err, liveCalls("scripted-judge"))
	}
	file := filepath.Join(t.TempDir(), "recording.json")
	if err := rep.Recording().Write(file); err != nil {
		t.Fatal(err)
	}
	recording, err := evals.ReadRecording(file)
	if err != nil || len(recording.Runs) != 14 || len(recording.Verdict) != 2 {
		t.Fatalf("the recording read back: %v", err)
	}
	offline, db, offlineCalls := evalEngine(t, true)
	replay := func(id string, allowJudge bool, s *evals.Suite, from *evals.Recording) *evals.Report {
		t.Helper()
		rep, err := (&evals.Runner{Engine: offline.Engine, Log: offline.Store, RunID: id, Replay: from, AllowJudge: allowJudge, Record: true}).Run(ctx, s)
		if err != nil {
			t.Fatalf("replay %s: %v", id, err)
		}
		return rep
	}
	status := func(rep *evals.Report, name string) evals.CaseReport {
		for _, c := range rep.Cases {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no case %s", name)
		return evals.CaseReport{}
	}

	same := replay("same", false, demoSuite(t), recording)
	if !same.Passed || offlineCalls("scripted-support") != 0 || offlineCalls("scripted-judge") != 0 {
		t.Fatalf("the unchanged suite on its recording: %+v", same.Cases)
	}
	changed := replay("changed", false, demoSuite(t, `- contains: "not found"`, `- contains: "not known"`), recording)
	if c := status(changed, "unknown order"); changed.Passed || c.Status != evals.StatusFailed || c.Passes != 0 || c.Runs != 2 ||
		!strings.Contains(c.Failures[0], `contains "not known"`) {
		t.Fatalf("a changed check: %+v", c)
	}
	for _, c := range changed.Cases {
		if c.Name != "unknown order" && !c.Passed {
			t.Errorf("case %s failed on its unchanged checks: %v", c.Name, c.Failures)
		}
	}
	rubric := demoSuite(t, "and guesses nothing.", "and names no refund.")
	waiting := replay("waiting", false, rubric, recording)
	c := status(waiting, "order status")
	if waiting.Passed || c.Status != evals.StatusNeedsJudge || c.NeedsJudge != 2 || len(c.Failures) != 0 || len(c.Waiting) != 2 ||
		offlineCalls("scripted-judge") != 0 {
		t.Fatalf("a changed rubric without a judge: %+v", c)
	}
	if regs := waiting.Compare(same, 0, 0); len(regs) != 0 {
		t.Fatalf("a case waiting for a judge is no regression: %+v", regs)
	}
	// A second check with the same request has a verdict of its own: none recorded.
	twice := replay("twice", false, demoSuite(t, "          llm: scripted-judge\n",
		"          llm: scripted-judge\n      - judge: {rubric: \"The answer gives the order's status and its carrier, and guesses nothing.\", llm: scripted-judge}\n"), recording)
	if c := status(twice, "order status"); c.Status != evals.StatusNeedsJudge || len(c.Waiting) != 2 || len(c.Failures) != 0 {
		t.Fatalf("a judged check repeated: %+v", c)
	}
	x := validJUnit(t, waiting)
	if !strings.Contains(string(x), `<error message="0 of 2 runs passed (100% needed); 2 wait for a judge" type="needs_judge">`) {
		t.Fatalf("JUnit of a case waiting for a judge:\n%s", x)
	}
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow(`SELECT count(*) FROM eval_results WHERE run_id = 'waiting' AND status = 'needs_judge' AND case_name = 'order status'
		AND needs_judge IS NOT NULL AND failures IS NULL`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("eval_results of the runs waiting for a judge: %d, %v", n, err)
	}

	// A judge may be called: a live engine, once a run of the case.
	judgedLive, _, judgeCalls := evalEngine(t, false)
	judged, err := (&evals.Runner{Engine: judgedLive.Engine, Log: judgedLive.Store, RunID: "judged", Replay: recording, AllowJudge: true, Record: true}).Run(ctx, rubric)
	if err != nil || !judged.Passed || judgeCalls("scripted-judge") != 2 || judgeCalls("scripted-support") != 0 {
		t.Fatalf("a changed rubric with a judge: %v, judge calls %d, agent calls %d: %+v", err, judgeCalls("scripted-judge"), judgeCalls("scripted-support"), judged.Cases)
	}
	again := replay("again", false, rubric, judged.Recording())
	if !again.Passed || offlineCalls("scripted-judge") != 0 {
		t.Fatalf("the judged recording replayed: %+v", again.Cases)
	}
	// A verdict's pass_if is the suite's: the recorded verdict is read again.
	strict := replay("strict", false, demoSuite(t, "llm: scripted-judge", "llm: scripted-judge\n          pass_if: '^PASS\\nThe answer names'"), recording)
	if c := status(strict, "order status"); c.Status != evals.StatusFailed || offlineCalls("scripted-judge") != 0 {
		t.Fatalf("a changed pass_if: %+v", c)
	}

	for edits, want := range map[[2]string]string{
		{"name: two turns", "name: three turns"}:                     `cases[6]: case "three turns" is not in the recording`,
		{`input: "where is order 5?"`, `input: "where is order 6?"`}: `cases[2].inputs: case "unknown order" ran other inputs`,
	} {
		_, err := (&evals.Runner{Engine: offline.Engine, Log: offline.Store, RunID: "refused", Replay: recording}).Run(ctx, demoSuite(t, edits[0], edits[1]))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: err = %v, want %s", edits, err, want)
		}
	}
}
