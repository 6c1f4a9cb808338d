package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// Engine is what a run needs of turnlog: its apps, sessions, turns and answers to
// questions.
type Engine interface {
	App(name string) (*fsm.App, bool)
	CreateSession(ctx context.Context, app, owner string, metadata json.RawMessage) (projection.Session, error)
	RunTurn(ctx context.Context, session, input string) (*fsm.Result, error)
	Resume(ctx context.Context, session, user string, answers map[string]fsm.Answer) (*fsm.StartedTurn, error)
}

// Log reads a session's events, and appends the eval run's own.
type Log interface {
	Events(ctx context.Context, session string, after int64) ([]events.Event, error)
	Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error)
}

// Runner runs suites on an engine. RunID tags every session it makes (metadata
// eval_run, with eval_case and eval_attempt); Owner owns them (default "eval").
type Runner struct {
	Engine Engine
	Log    Log
	RunID  string
	Owner  string
	// Progress, when set, hears each run that ends: how many ended of how many.
	Progress func(done, total int)
	// Workspaces is the root each run's workspace is made under, when the app's
	// workspaces are per session (turnlog eval opens the app so, on a temporary
	// root): a suite's workspace folder is copied into each ("": none).
	Workspaces string
	// Record keeps each run's events and the judges' verdicts for the report's
	// Recording.
	Record bool
	// Replay, when set, runs no case: each recorded run is checked again, calling no
	// model — but a judge whose request no recorded verdict answers, when
	// AllowJudge says so (else the run needs a judge).
	Replay     *Recording
	AllowJudge bool

	verdicts map[verdictKey]events.EvalJudged
}

// Run is one run of a case: its session, whether it passed and why not, the judged
// checks that wait for a judge, and what it spent.
type Run struct {
	Case       string        `json:"case"`
	Attempt    int           `json:"attempt"`
	Session    string        `json:"session_id"`
	Passed     bool          `json:"passed"`
	Failures   []string      `json:"failures,omitempty"`
	NeedsJudge []string      `json:"needs_judge,omitempty"`
	Usage      events.Usage  `json:"usage"`
	Cost       float64       `json:"cost"`
	JudgeCost  float64       `json:"judge_cost,omitempty"` // what its judged checks' calls cost (not the run's own)
	Took       time.Duration `json:"took_ns"`
	Answer     string        `json:"answer"`
}

// job is one run to make: a case's attempt, or a recorded run to check again.
type job struct {
	c        *Case
	attempt  int
	recorded *RecordedRun
}

// done is a run as it ended: the run, the events it was judged on (kept for a
// recording), what ended it before any check, and the judges' verdicts.
type done struct {
	run         Run
	events      []events.Event
	runFailures []string
	verdicts    []events.EvalJudged
}

// Run runs every case of s its number of times, Parallel runs at once, and reports;
// with Replay, it checks each recorded run of the suite's cases instead.
func (r *Runner) Run(ctx context.Context, s *Suite) (*Report, error) {
	began := time.Now()
	if s.Parallel <= 0 { // a suite built in code, not decoded
		s.Parallel = 4
	}
	for i := range s.Cases {
		if err := s.Cases[i].prepare(fmt.Sprintf("cases[%d]", i), s.Runs); err != nil {
			return nil, err
		}
	}
	app, ok := r.Engine.App(s.App)
	if !ok {
		return nil, events.FieldError(events.CodeInvalid, "app", "the config has no app %q", s.App)
	}
	if err := checkJudges(app, s); err != nil {
		return nil, err
	}
	if err := r.checkWorkspace(app, s); err != nil {
		return nil, err
	}
	jobs, err := r.jobs(s)
	if err != nil {
		return nil, err
	}
	rec, err := r.openRecord(ctx, s, app, len(jobs))
	if err != nil {
		return nil, err
	}
	results := make([]done, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ended := 0
	for range min(s.Parallel, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i], errs[i] = r.runJob(ctx, s, app, jobs[i])
				if errs[i] == nil {
					errs[i] = rec.caseRun(ctx, s, results[i].run, results[i].verdicts)
				}
				mu.Lock()
				ended++
				if r.Progress != nil {
					r.Progress(ended, len(jobs))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	runs := make([]Run, len(results))
	for i, d := range results {
		runs[i] = d.run
	}
	rep := report(s, r.RunID, runs, began, time.Since(began))
	if err := rec.append(ctx, "", &events.EvalRunEnded{Run: r.RunID, Passed: rep.Passed}); err != nil {
		return nil, err
	}
	if r.Record {
		rep.recording = r.recording(s, jobs, results)
	}
	return rep, nil
}

// jobs are the runs to make: each case its number of times, or each recorded run of
// each case.
func (r *Runner) jobs(s *Suite) ([]job, error) {
	var jobs []job
	if r.Replay == nil {
		for i := range s.Cases {
			for a := 1; a <= s.Cases[i].Runs; a++ {
				jobs = append(jobs, job{c: &s.Cases[i], attempt: a})
			}
		}
		return jobs, nil
	}
	recorded, err := r.Replay.runsOf(s)
	if err != nil {
		return nil, err
	}
	if r.verdicts, err = r.Replay.verdicts(); err != nil {
		return nil, err
	}
	for i := range s.Cases {
		for _, rr := range recorded[s.Cases[i].Name] {
			jobs = append(jobs, job{c: &s.Cases[i], attempt: rr.Attempt, recorded: rr})
		}
	}
	return jobs, nil
}

// runJob makes one run — a case run in a session of its own, or a recorded run read
// back — and checks it. An error is turnlog's own (the store failed); what the agent
// does is the run's result.
func (r *Runner) runJob(ctx context.Context, s *Suite, app *fsm.App, j job) (done, error) {
	var d done
	var err error
	if j.recorded != nil {
		rr := j.recorded
		d.run = Run{Case: j.c.Name, Attempt: rr.Attempt, Session: rr.Session, Took: time.Duration(rr.TookMS) * time.Millisecond}
		d.events, d.runFailures = rr.Events, rr.RunFailures
	} else if d, err = r.runCase(ctx, s, app, j.c, j.attempt); err != nil {
		return done{}, fmt.Errorf("case %s: %w", j.c.Name, err)
	}
	o := observe(d.events)
	run := &d.run
	run.Answer, run.Usage, run.Cost = o.answer, o.usage, o.cost
	run.Failures = append(append(run.Failures, d.runFailures...), o.ended...)
	judgedRequests := map[string]int{}
	for k, ch := range j.c.Expect {
		if ch.Judge != nil {
			jd := r.judge(ctx, app, j.c, k, run, o.answer, judgedRequests)
			switch {
			case jd.verdict == nil && jd.failure == "":
				run.NeedsJudge = append(run.NeedsJudge, fmt.Sprintf("judge %q: the recording has no verdict on this request (the rubric, the judge or the answer changed, or the check is new); --allow-judge asks the judge", short(ch.Judge.Rubric)))
			case jd.verdict != nil:
				d.verdicts = append(d.verdicts, *jd.verdict)
				run.JudgeCost += jd.verdict.Cost
			}
			if jd.failure != "" {
				run.Failures = append(run.Failures, jd.failure)
			}
			continue
		}
		if why := ch.failure(j.c.regexps[k], o); why != "" {
			run.Failures = append(run.Failures, why)
		}
	}
	run.Passed = len(run.Failures) == 0 && len(run.NeedsJudge) == 0
	return d, nil
}

// runCase runs one case once, in a session of its own, its workspace seeded from
// the suite's: the run, its events and what ended it before any check.
func (r *Runner) runCase(ctx context.Context, s *Suite, app *fsm.App, c *Case, attempt int) (done, error) {
	owner := r.owner()
	meta := events.MustMarshal(map[string]any{"eval_run": r.RunID, "eval_suite": s.Name, "eval_case": c.Name, "eval_attempt": attempt})
	began := time.Now()
	sess, err := r.Engine.CreateSession(ctx, s.App, owner, meta)
	if err != nil {
		return done{}, err
	}
	if err := r.seedWorkspace(app, s, sess.ID); err != nil {
		return done{}, fmt.Errorf("seed the workspace of session %s: %w", sess.ID, err)
	}
	d := done{run: Run{Case: c.Name, Attempt: attempt, Session: sess.ID}}
	for _, input := range c.Inputs {
		res, err := r.Engine.RunTurn(ctx, sess.ID, input)
		for err == nil && res.Status == fsm.StatusSuspended {
			answers, why := approvals(c, res.Interrupts)
			if why != "" {
				d.runFailures = append(d.runFailures, why)
				break
			}
			var st *fsm.StartedTurn
			if st, err = r.Engine.Resume(ctx, sess.ID, owner, answers); err == nil {
				res, err = st.Wait()
			}
		}
		if err != nil {
			return done{}, err
		}
	}
	d.run.Took = time.Since(began)
	if d.events, err = r.Log.Events(ctx, sess.ID, 0); err != nil {
		return done{}, err
	}
	return d, nil
}

// recording is the runs as a recording: each with its events, and the verdicts.
func (r *Runner) recording(s *Suite, jobs []job, results []done) *Recording {
	out := &Recording{Format: RecordingFormat, Version: 1, Suite: s.Name, App: s.App, Run: r.RunID}
	for i, d := range results {
		out.Runs = append(out.Runs, RecordedRun{Case: d.run.Case, Attempt: d.run.Attempt, Inputs: jobs[i].c.Inputs, Approve: jobs[i].c.Approve, Session: d.run.Session,
			RunFailures: d.runFailures, TookMS: d.run.Took.Milliseconds(), Events: d.events})
		for _, v := range d.verdicts {
			out.Verdict = append(out.Verdict, events.MustNew("", judgePath(v), &v))
		}
	}
	return out
}

// approvals answers a turn's questions from the case's approvals: "" when every one
// has an answer, else why the run stops waiting.
func approvals(c *Case, asked []fsm.Interrupt) (map[string]fsm.Answer, string) {
	out := map[string]fsm.Answer{}
	for _, in := range asked {
		found := false
		for _, a := range c.Approve {
			if in.Kind == events.InterruptToolApproval && a.Tool == in.Tool {
				yes := a.Answer == "yes"
				out[in.ID], found = fsm.Answer{Confirmed: &yes}, true
				break
			}
		}
		if !found {
			return nil, fmt.Sprintf("the turn waits for a person and the case gives no answer: %s %s (%s)", in.Kind, in.Tool, in.Reason)
		}
	}
	return out, ""
}
