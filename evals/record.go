package evals

import (
	"context"
	"fmt"
	"sync"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// record is an eval run's own log: a session "eval-<run>" of the suite's app, owned
// by the runner's owner, holding EvalRunStarted, an EvalCaseRun for each run of a
// case as it ends, and EvalRunEnded — what the eval_results view folds.
type record struct {
	log     Log
	session string
	mu      sync.Mutex
	seq     int64
}

// LogSession is the session an eval run's own log is kept in.
func LogSession(run string) string { return "eval-" + run }

// openRecord starts the run's log.
func (r *Runner) openRecord(ctx context.Context, s *Suite, app *fsm.App, runs int) (*record, error) {
	rec := &record{log: r.Log, session: LogSession(r.RunID)}
	meta := events.MustMarshal(map[string]string{"eval_run": r.RunID, "eval_suite": s.Name, "eval_log": "true"})
	created := events.MustNew("", "", &events.SessionCreated{App: s.App, Owner: r.owner(), Agent: app.StartAgent, Metadata: meta})
	started := &events.EvalRunStarted{Run: r.RunID, Suite: s.Name, Cases: len(s.Cases), Runs: runs}
	if r.Replay != nil {
		started.ReplayOf = r.Replay.Run
	}
	if err := rec.appendEvents(ctx, created, events.MustNew("", "", started)); err != nil {
		return nil, err
	}
	return rec, nil
}

func (r *Runner) owner() string {
	if r.Owner == "" {
		return "eval"
	}
	return r.Owner
}

// caseRun records one run of a case: its verdicts, then the run, in one append.
func (rec *record) caseRun(ctx context.Context, s *Suite, run Run, verdicts []events.EvalJudged) error {
	var evs []events.Event
	for i := range verdicts {
		ev, err := events.New("", judgePath(verdicts[i]), &verdicts[i])
		if err != nil {
			return err
		}
		evs = append(evs, ev)
	}
	ev, err := events.New("", fmt.Sprintf("eval/%s/%d", run.Case, run.Attempt), &events.EvalCaseRun{Run: rec.session[len("eval-"):], Suite: s.Name,
		Case: run.Case, Attempt: run.Attempt, Session: run.Session, Passed: run.Passed, Failures: run.Failures, NeedsJudge: run.NeedsJudge,
		Usage: run.Usage, Cost: run.Cost, TookMS: run.Took.Milliseconds()})
	if err != nil {
		return err
	}
	return rec.appendEvents(ctx, append(evs, ev)...)
}

// judgePath is where a verdict is kept in the run's log.
func judgePath(v events.EvalJudged) string {
	return fmt.Sprintf("eval/%s/%d/judge/%d", v.Case, v.Attempt, v.Check)
}

func (rec *record) append(ctx context.Context, path string, p events.Payload) error {
	ev, err := events.New("", path, p)
	if err != nil {
		return err
	}
	return rec.appendEvents(ctx, ev)
}

// appendEvents appends evs to the run's log after what it last appended — or, when
// something else appended there since (the log is a session like any other), after
// that.
func (rec *record) appendEvents(ctx context.Context, evs ...events.Event) error {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for attempt := 0; ; attempt++ {
		for i := range evs {
			evs[i].Session, evs[i].Seq = rec.session, rec.seq+int64(i)+1
		}
		out, err := rec.log.Append(ctx, rec.session, rec.seq, evs)
		if err == nil {
			rec.seq = out[len(out)-1].Seq
			return nil
		}
		if events.CodeOf(err) != events.CodeConflict || attempt == 3 {
			return fmt.Errorf("record the eval run: %w", err)
		}
		since, rerr := rec.log.Events(ctx, rec.session, rec.seq)
		if rerr != nil {
			return fmt.Errorf("record the eval run: %w", rerr)
		}
		if len(since) > 0 {
			rec.seq = since[len(since)-1].Seq
		}
	}
}

// EventReader reads a session's events.
type EventReader interface {
	Events(ctx context.Context, session string, after int64) ([]events.Event, error)
}

// ReportOf rebuilds an earlier run's report from its own log (as a baseline): each
// case's runs, passes and cost a run. Errors: not_found (no such run).
func ReportOf(ctx context.Context, log EventReader, run string) (*Report, error) {
	evs, err := log.Events(ctx, LogSession(run), 0)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, events.Errorf(events.CodeNotFound, "no eval run %q in this log", run)
	}
	rep := &Report{RunID: run}
	index := map[string]int{}
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeEvalRunStarted:
			if st, err := events.DecodeAs[*events.EvalRunStarted](ev); err == nil {
				rep.Suite = st.Suite
			}
		case events.TypeEvalRunEnded:
			if end, err := events.DecodeAs[*events.EvalRunEnded](ev); err == nil {
				rep.Passed = end.Passed
			}
		case events.TypeEvalCaseRun:
			cr, err := events.DecodeAs[*events.EvalCaseRun](ev)
			if err != nil {
				return nil, err
			}
			i, ok := index[cr.Case]
			if !ok {
				i = len(rep.Cases)
				index[cr.Case] = i
				rep.Cases = append(rep.Cases, CaseReport{Name: cr.Case, Required: 1})
			}
			c := &rep.Cases[i]
			c.Runs++
			c.Sessions = append(c.Sessions, cr.Session)
			c.Cost += cr.Cost
			c.Tokens += cr.Usage.InputTokens + cr.Usage.OutputTokens
			switch {
			case cr.Passed:
				c.Passes++
			case len(cr.Failures) == 0 && len(cr.NeedsJudge) > 0:
				c.NeedsJudge++
			}
		}
	}
	for i := range rep.Cases {
		c := &rep.Cases[i]
		c.Cost /= float64(c.Runs)
		c.Tokens /= int64(c.Runs)
		c.settle() // against all of its runs passing: the log keeps no pass rate
	}
	return rep, nil
}
