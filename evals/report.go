package evals

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what a suite's run came to: each case's runs, and whether the suite
// passed (every case reached its pass rate).
type Report struct {
	Suite  string        `json:"suite"`
	RunID  string        `json:"run_id"`
	Passed bool          `json:"passed"`
	Cases  []CaseReport  `json:"cases"`
	Took   time.Duration `json:"took_ns"`
}

// CaseReport is one case over its runs: how many passed, the rate it needed, what a
// run spent on average, its median time, its sessions, and the failures of the runs
// that failed.
type CaseReport struct {
	Name     string        `json:"name"`
	Runs     int           `json:"runs"`
	Passes   int           `json:"passes"`
	PassRate float64       `json:"pass_rate"`
	Required float64       `json:"required"`
	Passed   bool          `json:"passed"`
	Tokens   int64         `json:"tokens"` // a run's, on average
	Cost     float64       `json:"cost"`   // a run's, on average
	P50      time.Duration `json:"p50_ns"`
	Sessions []string      `json:"sessions"`
	Failures []string      `json:"failures,omitempty"`
}

func report(s *Suite, runID string, runs []Run, took time.Duration) *Report {
	rep := &Report{Suite: s.Name, RunID: runID, Passed: true, Took: took}
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
			times = append(times, r.Took)
			if r.Passed {
				cr.Passes++
			}
			for _, f := range r.Failures {
				cr.Failures = append(cr.Failures, fmt.Sprintf("run %d (session %s): %s", r.Attempt, r.Session, f))
			}
		}
		if cr.Runs > 0 {
			cr.PassRate = float64(cr.Passes) / float64(cr.Runs)
			cr.Tokens /= int64(cr.Runs)
			cr.Cost /= float64(cr.Runs)
			slices.Sort(times)
			cr.P50 = times[len(times)/2]
		}
		cr.Passed = cr.PassRate >= cr.Required
		rep.Passed = rep.Passed && cr.Passed
		rep.Cases = append(rep.Cases, cr)
	}
	return rep
}

// Table writes the report as a table: case, passes/runs, tokens and cost a run, p50
// time, and each failure under its case.
func (r *Report) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tpasses\ttokens\tcost\tp50\t")
	for _, c := range r.Cases {
		mark := "ok"
		if !c.Passed {
			mark = "FAIL"
		}
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
	}
	verdict := "passed"
	if !r.Passed {
		verdict = "FAILED"
	}
	_, err := fmt.Fprintf(w, "suite %s %s (run %s, %s)\n", r.Suite, verdict, r.RunID, r.Took.Round(time.Millisecond))
	return err
}

// JUnit writes the report as JUnit XML: one testsuite, a testcase a case, failed
// with its failures when it did not reach its pass rate.
func (r *Report) JUnit(w io.Writer) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type property struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	type testcase struct {
		Name       string     `xml:"name,attr"`
		Classname  string     `xml:"classname,attr"`
		Time       string     `xml:"time,attr"`
		Properties []property `xml:"properties>property,omitempty"`
		Failure    *failure   `xml:"failure,omitempty"`
		SystemOut  string     `xml:"system-out,omitempty"`
	}
	type testsuite struct {
		XMLName   xml.Name   `xml:"testsuite"`
		Name      string     `xml:"name,attr"`
		Tests     int        `xml:"tests,attr"`
		Failures  int        `xml:"failures,attr"`
		Errors    int        `xml:"errors,attr"`
		Time      string     `xml:"time,attr"`
		Testcases []testcase `xml:"testcase"`
	}
	type testsuites struct {
		XMLName xml.Name    `xml:"testsuites"`
		Name    string      `xml:"name,attr"`
		Tests   int         `xml:"tests,attr"`
		Fail    int         `xml:"failures,attr"`
		Time    string      `xml:"time,attr"`
		Suites  []testsuite `xml:"testsuite"`
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
	ts := testsuite{Name: r.Suite, Tests: len(r.Cases), Time: secs(r.Took)}
	for _, c := range r.Cases {
		tc := testcase{Name: c.Name, Classname: r.Suite, Time: secs(c.P50),
			Properties: []property{{"passes", fmt.Sprint(c.Passes)}, {"runs", fmt.Sprint(c.Runs)}, {"tokens", fmt.Sprint(c.Tokens)},
				{"cost", fmt.Sprint(c.Cost)}, {"sessions", strings.Join(c.Sessions, " ")}}}
		if !c.Passed {
			ts.Failures++
			tc.Failure = &failure{Type: "eval", Message: fmt.Sprintf("%d of %d runs passed (%.0f%% needed)", c.Passes, c.Runs, c.Required*100),
				Text: strings.Join(c.Failures, "\n")}
		}
		ts.Testcases = append(ts.Testcases, tc)
	}
	doc := testsuites{Name: r.Suite, Tests: ts.Tests, Fail: ts.Failures, Time: ts.Time, Suites: []testsuite{ts}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
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
		if b.PassRate-c.PassRate > maxDrop+1e-9 {
			out = append(out, Regression{Case: c.Name, Reason: fmt.Sprintf("pass rate %.0f%% → %.0f%%", b.PassRate*100, c.PassRate*100)})
		}
		if c.Cost > b.Cost*(1+maxCostRise)+1e-12 { // from nothing, any cost is a rise
			out = append(out, Regression{Case: c.Name, Reason: fmt.Sprintf("cost a run %.6g → %.6g", b.Cost, c.Cost)})
		}
	}
	return out
}
