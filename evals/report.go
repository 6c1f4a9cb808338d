package evals

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Report is what a suite's run came to: each case's runs, and whether the suite
// passed (every case reached its pass rate).
type Report struct {
	Suite   string        `json:"suite"`
	RunID   string        `json:"run_id"`
	Passed  bool          `json:"passed"`
	Cases   []CaseReport  `json:"cases"`
	Started time.Time     `json:"started"`
	Took    time.Duration `json:"took_ns"`

	recording *Recording
}

// Recording is the run's recording, when the runner kept one (Runner.Record).
func (r *Report) Recording() *Recording { return r.recording }

// Case statuses.
const (
	StatusPassed     = "passed"
	StatusFailed     = "failed"
	StatusNeedsJudge = "needs_judge" // it reaches its pass rate only if runs waiting for a judge pass
)

// CaseReport is one case over its runs: how many passed and how many wait for a
// judge, the rate it needed, its status, what a run spent on average, its median
// time, its sessions, and the failures of the runs that failed.
type CaseReport struct {
	Name       string        `json:"name"`
	Runs       int           `json:"runs"`
	Passes     int           `json:"passes"`
	NeedsJudge int           `json:"needs_judge,omitempty"`
	PassRate   float64       `json:"pass_rate"`
	Required   float64       `json:"required"`
	Passed     bool          `json:"passed"`
	Status     string        `json:"status"`
	Tokens     int64         `json:"tokens"`               // a run's, on average
	Cost       float64       `json:"cost"`                 // a run's, on average
	JudgeCost  float64       `json:"judge_cost,omitempty"` // a run's judged checks', on average
	P50        time.Duration `json:"p50_ns"`
	Sessions   []string      `json:"sessions"`
	Failures   []string      `json:"failures,omitempty"`
	// Waiting are the judged checks no verdict answers, by run.
	Waiting []string `json:"waiting,omitempty"`
}

func report(s *Suite, runID string, runs []Run, began time.Time, took time.Duration) *Report {
	rep := &Report{Suite: s.Name, RunID: runID, Passed: true, Started: began.UTC(), Took: took}
	for i := range s.Cases {
		c := &s.Cases[i]
		cr := CaseReport{Name: c.Name, Required: 1}
		if c.PassRate != nil {
			cr.Required = *c.PassRate
		}
		var times []time.Duration
		for _, r := range runs {
			if r.Case != c.Name {
				continue
			}
			cr.Runs++
			cr.Sessions = append(cr.Sessions, r.Session)
			cr.Tokens += r.Usage.InputTokens + r.Usage.OutputTokens
			cr.Cost += r.Cost
			cr.JudgeCost += r.JudgeCost
			times = append(times, r.Took)
			switch {
			case r.Passed:
				cr.Passes++
			case len(r.Failures) == 0:
				cr.NeedsJudge++
			}
			for _, f := range r.Failures {
				cr.Failures = append(cr.Failures, fmt.Sprintf("run %d (session %s): %s", r.Attempt, r.Session, f))
			}
			for _, w := range r.NeedsJudge {
				cr.Waiting = append(cr.Waiting, fmt.Sprintf("run %d (session %s): %s", r.Attempt, r.Session, w))
			}
		}
		if cr.Runs > 0 {
			cr.Tokens /= int64(cr.Runs)
			cr.Cost /= float64(cr.Runs)
			cr.JudgeCost /= float64(cr.Runs)
			slices.Sort(times)
			cr.P50 = times[len(times)/2]
		}
		cr.settle()
		rep.Passed = rep.Passed && cr.Passed
		rep.Cases = append(rep.Cases, cr)
	}
	return rep
}

// settle sets the case's pass rate and status from its counts.
func (cr *CaseReport) settle() {
	if cr.Runs > 0 {
		cr.PassRate = float64(cr.Passes) / float64(cr.Runs)
	}
	cr.Passed = cr.Runs > 0 && cr.PassRate >= cr.Required-1e-9
	switch {
	case cr.Passed:
		cr.Status = StatusPassed
	case cr.NeedsJudge > 0 && float64(cr.Passes+cr.NeedsJudge)/float64(cr.Runs) >= cr.Required-1e-9:
		cr.Status = StatusNeedsJudge
	default:
		cr.Status = StatusFailed
	}
}

// Table writes the report as a table: case, passes/runs, tokens and cost a run, p50
// time, and each failure under its case.
func (r *Report) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tpasses\ttokens\tcost\tp50\t")
	for _, c := range r.Cases {
		mark := map[string]string{StatusPassed: "ok", StatusFailed: "FAIL", StatusNeedsJudge: "NEEDS_JUDGE"}[c.Status]
		fmt.Fprintf(tw, "%s\t%d/%d %s\t%d\t%.6g\t%s\t\n", c.Name, c.Passes, c.Runs, mark, c.Tokens, c.Cost, c.P50.Round(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Cases {
		for _, f := range c.Failures {
			if _, err := fmt.Fprintf(w, "  %s: %s\n", c.Name, f); err != nil {
				return err
			}
		}
		for _, f := range c.Waiting {
			if _, err := fmt.Fprintf(w, "  %s: needs_judge: %s\n", c.Name, f); err != nil {
				return err
			}
		}
	}
	verdict := "passed"
	if !r.Passed {
		verdict = "FAILED"
	}
	_, err := fmt.Fprintf(w, "suite %s %s (run %s, %s)\n", r.Suite, verdict, r.RunID, r.Took.Round(time.Millisecond))
	return err
}

// Regression is a case that did worse than in a baseline run.
type Regression struct {
	Case   string `json:"case"`
	Reason string `json:"reason"`
}

// Compare finds the cases whose pass rate dropped by more than maxDrop (0.1: ten
// points) or whose cost a run rose by more than maxCostRise (0.2: a fifth) since the
// baseline; a case the baseline lacks is compared with nothing.
func (r *Report) Compare(baseline *Report, maxDrop, maxCostRise float64) []Regression {
	var out []Regression
	for _, c := range r.Cases {
		i := slices.IndexFunc(baseline.Cases, func(b CaseReport) bool { return b.Name == c.Name })
		if i < 0 {
			continue
		}
		b := baseline.Cases[i]
		// Runs waiting for a judge count as passes here: the case is reported as
		// waiting, and is a regression only if it dropped even so.
		rate := c.PassRate
		if c.Runs > 0 {
			rate = float64(c.Passes+c.NeedsJudge) / float64(c.Runs)
		}
		if b.PassRate-rate > maxDrop+1e-9 {
			out = append(out, Regression{Case: c.Name, Reason: fmt.Sprintf("pass rate %.0f%% → %.0f%%", b.PassRate*100, c.PassRate*100)})
		}
		if c.Cost > b.Cost*(1+maxCostRise)+1e-12 { // from nothing, any cost is a rise
			out = append(out, Regression{Case: c.Name, Reason: fmt.Sprintf("cost a run %.6g → %.6g", b.Cost, c.Cost)})
		}
	}
	return out
}
