package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
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
}

// Run is one run of a case: its session, whether it passed and why not, and what
// it spent.
type Run struct {
	Case     string        `json:"case"`
	Attempt  int           `json:"attempt"`
	Session  string        `json:"session_id"`
	Passed   bool          `json:"passed"`
	Failures []string      `json:"failures,omitempty"`
	Usage    events.Usage  `json:"usage"`
	Cost     float64       `json:"cost"`
	Took     time.Duration `json:"took_ns"`
	Answer   string        `json:"answer"`
}

// Run runs every case of s its number of times, Parallel runs at once, and reports.
func (r *Runner) Run(ctx context.Context, s *Suite) (*Report, error) {
	began := time.Now()
	if s.Parallel <= 0 { // a suite built in code, not decoded
		s.Parallel = 4
	}
	for i := range s.Cases {
		if err := s.Cases[i].prepare(s.Runs); err != nil {
			return nil, err
		}
	}
	rec, err := r.openRecord(ctx, s)
	if err != nil {
		return nil, err
	}
	type job struct {
		c       *Case
		attempt int
	}
	var jobs []job
	for i := range s.Cases {
		for a := 1; a <= s.Cases[i].Runs; a++ {
			jobs = append(jobs, job{&s.Cases[i], a})
		}
	}
	runs := make([]Run, len(jobs))
	errs := make([]error, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range min(s.Parallel, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				runs[i], errs[i] = r.runCase(ctx, s, jobs[i].c, jobs[i].attempt)
				if errs[i] == nil {
					errs[i] = rec.caseRun(ctx, s, runs[i])
				}
				mu.Lock()
				done++
				if r.Progress != nil {
					r.Progress(done, len(jobs))
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
	rep := report(s, r.RunID, runs, time.Since(began))
	if err := rec.append(ctx, "", &events.EvalRunEnded{Run: r.RunID, Passed: rep.Passed}); err != nil {
		return nil, err
	}
	return rep, nil
}

// runCase runs one case once, in a session of its own. An error is turnlog's own
// (the store failed, the app is missing); what the agent does is the run's result.
func (r *Runner) runCase(ctx context.Context, s *Suite, c *Case, attempt int) (Run, error) {
	owner := r.owner()
	meta := events.MustMarshal(map[string]any{"eval_run": r.RunID, "eval_suite": s.Name, "eval_case": c.Name, "eval_attempt": attempt})
	began := time.Now()
	sess, err := r.Engine.CreateSession(ctx, s.App, owner, meta)
	if err != nil {
		return Run{}, fmt.Errorf("case %s: %w", c.Name, err)
	}
	run := Run{Case: c.Name, Attempt: attempt, Session: sess.ID}
	completed := true
	for _, input := range c.Inputs {
		res, err := r.Engine.RunTurn(ctx, sess.ID, input)
		for err == nil && res.Status == fsm.StatusSuspended {
			answers, why := approvals(c, res.Interrupts)
			if why != "" {
				run.Failures = append(run.Failures, why)
				break
			}
			var st *fsm.StartedTurn
			if st, err = r.Engine.Resume(ctx, sess.ID, owner, answers); err == nil {
				res, err = st.Wait()
			}
		}
		if err != nil {
			return Run{}, fmt.Errorf("case %s: %w", c.Name, err)
		}
		run.Answer = res.Output
		if res.Status != fsm.StatusCompleted {
			completed = false
			if res.Error != nil {
				run.Failures = append(run.Failures, fmt.Sprintf("turn %q ended %s: %s: %s", input, res.Status, res.Error.Code, res.Error.Message))
			}
		}
	}
	run.Took = time.Since(began)
	evs, err := r.Log.Events(ctx, sess.ID, 0)
	if err != nil {
		return Run{}, fmt.Errorf("case %s: %w", c.Name, err)
	}
	seen := observe(evs)
	run.Usage, run.Cost = seen.usage, seen.cost
	for j, ch := range c.Expect {
		if why := ch.failure(c.regexps[j], run.Answer, completed, seen); why != "" {
			run.Failures = append(run.Failures, why)
		}
	}
	run.Passed = len(run.Failures) == 0
	return run, nil
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

// seen is what a run's log shows: the calls that ran, guardrails that tripped, and
// what the model calls spent.
type seen struct {
	calls   []toolCall
	tripped []string
	usage   events.Usage
	cost    float64
}

type toolCall struct {
	name string
	args json.RawMessage
}

// neverRan are the error kinds of a call that did not run: refused, malformed, of a
// tool the agent lacks, or stopped before it began.
var neverRan = map[string]bool{fsm.ToolDeniedKind: true, "rejected": true, fsm.ToolErrInvalidArguments: true, fsm.ToolErrUnknownTool: true,
	fsm.SkillRefusedKind: true, fsm.ToolErrBranchFiles: true, fsm.ToolErrReplayOnly: true}

// observe reads a run's events.
func observe(evs []events.Event) seen {
	var s seen
	asked := map[string]toolCall{} // call id → as the model asked
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeModelCalled:
			if mc, err := events.DecodeAs[*events.ModelCalled](ev); err == nil {
				s.usage, s.cost = s.usage.Add(mc.Usage), s.cost+mc.Cost
				for _, tc := range mc.Response.ToolCalls {
					asked[tc.ID] = toolCall{name: tc.Name, args: tc.Arguments}
				}
			}
		case events.TypeContextCompacted:
			if cc, err := events.DecodeAs[*events.ContextCompacted](ev); err == nil {
				s.usage, s.cost = s.usage.Add(cc.Usage), s.cost+cc.Cost
			}
		case events.TypeToolResulted:
			tr, err := events.DecodeAs[*events.ToolResulted](ev)
			if err != nil || neverRan[tr.ErrorKind] {
				continue
			}
			call, ok := asked[tr.CallID]
			if !ok {
				call = toolCall{name: tr.Tool}
			}
			s.calls = append(s.calls, call)
		case events.TypeGuardrailTripped:
			if gt, err := events.DecodeAs[*events.GuardrailTripped](ev); err == nil {
				s.tripped = append(s.tripped, gt.Name)
			}
		}
	}
	return s
}

// failure is why a run fails the check ("": it passes).
func (ch Check) failure(re interface{ MatchString(string) bool }, answer string, completed bool, s seen) string {
	shown := fmt.Sprintf("%q", events.ShortenForMessage(answer, 200))
	switch {
	case ch.Contains != "" && !strings.Contains(answer, ch.Contains):
		return fmt.Sprintf("contains %q: the answer %s does not", ch.Contains, shown)
	case ch.NotContains != "" && strings.Contains(answer, ch.NotContains):
		return fmt.Sprintf("not_contains %q: the answer %s does", ch.NotContains, shown)
	case ch.Matches != "" && !re.MatchString(answer):
		return fmt.Sprintf("matches %q: the answer %s does not", ch.Matches, shown)
	case ch.ToolCalled != nil:
		for _, c := range s.calls {
			if c.name == ch.ToolCalled.Name && matchesPattern(c.args, ch.ToolCalled.Arguments) {
				return ""
			}
		}
		return fmt.Sprintf("tool_called %s%s: no such call ran (ran: %s)", ch.ToolCalled.Name, patternText(ch.ToolCalled.Arguments), callsText(s.calls))
	case ch.ToolNotCalled != "":
		for _, c := range s.calls {
			if c.name == ch.ToolNotCalled {
				return fmt.Sprintf("tool_not_called %s: it ran with %s", ch.ToolNotCalled, c.args)
			}
		}
	case ch.NoGuardrailTripped && len(s.tripped) > 0:
		return fmt.Sprintf("no_guardrail_tripped: %s tripped", strings.Join(s.tripped, ", "))
	case ch.MaxTokens > 0 && s.usage.InputTokens+s.usage.OutputTokens > ch.MaxTokens:
		return fmt.Sprintf("max_tokens %d: the run spent %d", ch.MaxTokens, s.usage.InputTokens+s.usage.OutputTokens)
	case ch.MaxCost > 0 && s.cost > ch.MaxCost:
		return fmt.Sprintf("max_cost %g: the run cost %g", ch.MaxCost, s.cost)
	case ch.Completed && !completed:
		return "completed: a turn did not complete"
	}
	return ""
}

// matchesPattern says whether JSON arguments hold every key of pattern with the
// same value (an object in the pattern matches as a pattern of its own).
func matchesPattern(args json.RawMessage, pattern map[string]any) bool {
	if len(pattern) == 0 {
		return true
	}
	var got map[string]any
	if json.Unmarshal(args, &got) != nil {
		return false
	}
	return subset(got, pattern)
}

func subset(got, want map[string]any) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		if wm, ok := w.(map[string]any); ok {
			gm, ok := g.(map[string]any)
			if !ok || !subset(gm, wm) {
				return false
			}
			continue
		}
		if string(events.MustMarshal(normal(w))) != string(events.MustMarshal(normal(g))) {
			return false
		}
	}
	return true
}

// normal is a YAML or JSON value as JSON decodes it (numbers as float64).
func normal(v any) any {
	var out any
	if json.Unmarshal(events.MustMarshal(v), &out) != nil {
		return v
	}
	return out
}

func patternText(p map[string]any) string {
	if len(p) == 0 {
		return ""
	}
	return " " + string(events.MustMarshal(p))
}

func callsText(calls []toolCall) string {
	if len(calls) == 0 {
		return "none"
	}
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.name + " " + string(c.args)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
