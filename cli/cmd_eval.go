package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/turnlog/turnlog/evals"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// ExitEvalFailed ends turnlog eval when a case misses its pass rate or did worse than
// the baseline.
const ExitEvalFailed = ExitStatus(4)

// cmdEval runs an eval suite against its app and prints a table; --junit and --json
// write the report for CI systems and later runs, --baseline compares with one.
func cmdEval(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "eval", &f, false)
	runs := fs.Int("runs", 0, "run each case this many times (0: as the suite says)")
	parallel := fs.Int("parallel", 0, "runs at once (0: as the suite says, default 4)")
	junit := fs.String("junit", "", "write the report as JUnit XML to this file")
	jsonOut := fs.String("json", "", "write the report as JSON to this file (- for stdout, instead of the table)")
	baseline := fs.String("baseline", "", "compare with an earlier run — its id in this log, or its JSON report: a pass rate that drops or a cost that rises beyond the bounds fails the run")
	maxDrop := fs.Float64("max-drop", 0, "with --baseline: how far a case's pass rate may drop (0.1: ten points)")
	maxCostRise := fs.Float64("max-cost-rise", 0.2, "with --baseline: how far a case's cost a run may rise (0.2: a fifth)")
	as := fs.String("as", "eval", "the user the runs' sessions belong to (the inspector shows a user's eval runs)")
	record := fs.String("record", "", "write the run's recording to this file: every run's events and the judges' verdicts, for a later --replay")
	replay := fs.String("replay", "", "run no case: check the runs of this recording again with the suite's checks as they are now, calling no model")
	allowJudge := fs.Bool("allow-judge", false, "with --replay: call the judge of a judged check no recorded verdict answers (its rubric, judge or answer changed, or it is new); without it the run needs_judge")
	workspaces := fs.String("workspaces", "", "make each run's workspace under this folder, and keep them (default: a temporary folder, removed at the end)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireArgs(fs, 1, "one SUITE.yaml"); err != nil {
		return err
	}
	if *allowJudge && *replay == "" {
		return events.FieldError(events.CodeInvalid, "allow-judge", "goes with --replay: a run that is not a replay judges every judged check")
	}
	if *runs > 0 && *replay != "" {
		return events.FieldError(events.CodeInvalid, "runs", "goes without --replay: a replay checks the runs the recording holds")
	}
	suite, err := evals.ReadSuite(fs.Arg(0))
	if err != nil {
		return err
	}
	var recording *evals.Recording
	if *replay != "" {
		if recording, err = evals.ReadRecording(*replay); err != nil {
			return err
		}
	}
	if *runs > 0 {
		for i := range suite.Cases {
			suite.Cases[i].Runs = *runs
		}
	}
	if *parallel > 0 {
		suite.Parallel = *parallel
	}
	var base *evals.Report
	if _, err := os.Stat(*baseline); *baseline != "" && err == nil { // an earlier run's JSON report
		raw, err := os.ReadFile(*baseline)
		if err != nil {
			return events.FieldError(events.CodeInvalid, "baseline", "%v", err)
		}
		base = &evals.Report{}
		if err := json.Unmarshal(raw, base); err != nil {
			return events.FieldError(events.CodeInvalid, "baseline", "%s is no eval report: %v", *baseline, err)
		}
	}
	config := ""
	if suite.Config != "" {
		config = filepath.Join(suite.Dir, suite.Config)
	}
	// Each run's workspace is its own, under a root made for this run.
	root := *workspaces
	if root == "" {
		if root, err = os.MkdirTemp("", "turnlog-eval-"); err != nil {
			return err
		}
		defer os.RemoveAll(root)
	} else if err := os.MkdirAll(root, 0o700); err != nil {
		return events.FieldError(events.CodeInvalid, "workspaces", "%v", err)
	}
	c.workspace, c.workspaceScope = root, "session"
	tl, err := c.open(ctx, commonFlags{config: config, db: f.db, synchronous: f.synchronous})
	if err != nil {
		return err
	}
	defer tl.Close()
	if *baseline != "" && base == nil { // else an earlier run in this log, by its id
		if base, err = evals.ReportOf(ctx, tl.Store, *baseline); err != nil {
			return events.FieldError(events.CodeInvalid, "baseline", "is neither a report file nor a run of this log: %v", err)
		}
	}
	r := &evals.Runner{Engine: tl.Engine, Log: tl.Store, RunID: turnlog.NewULIDs()(), Owner: *as, Workspaces: root,
		Record: *record != "", Replay: recording, AllowJudge: *allowJudge}
	if st, err := os.Stderr.Stat(); err == nil && c.stderr == os.Stderr && st.Mode()&os.ModeCharDevice != 0 {
		r.Progress = func(done, total int) { fmt.Fprintf(c.stderr, "\r%d/%d runs", done, total) }
	}
	rep, err := r.Run(ctx, suite)
	if r.Progress != nil {
		fmt.Fprint(c.stderr, "\r")
	}
	if err != nil {
		return err
	}
	if *jsonOut != "-" {
		if err := rep.Table(c.stdout); err != nil {
			return err
		}
	}
	if err := writeReports(c, rep, *junit, *jsonOut); err != nil {
		return err
	}
	if *record != "" {
		if err := rep.Recording().Write(*record); err != nil {
			return err
		}
	}
	failed := !rep.Passed
	for _, cr := range rep.Cases {
		if cr.Status == evals.StatusNeedsJudge {
			fmt.Fprintf(c.stderr, "needs_judge: %s: a judged check has no recorded verdict on its request (its rubric, judge or answer changed, or it is new); --allow-judge asks the judge\n", cr.Name)
		}
	}
	if base != nil {
		for _, reg := range rep.Compare(base, *maxDrop, *maxCostRise) {
			fmt.Fprintf(c.stderr, "regression: %s: %s (baseline run %s)\n", reg.Case, reg.Reason, base.RunID)
			failed = true
		}
	}
	if failed {
		return ExitEvalFailed
	}
	return nil
}

// writeReports writes the JUnit XML and JSON reports asked for.
func writeReports(c *cliContext, rep *evals.Report, junit, jsonOut string) error {
	if junit != "" {
		f, err := os.Create(junit)
		if err != nil {
			return err
		}
		if err := rep.JUnit(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if jsonOut == "" {
		return nil
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	raw = append(raw, '\n')
	if jsonOut == "-" {
		_, err = c.stdout.Write(raw)
		return err
	}
	return os.WriteFile(jsonOut, raw, 0o644)
}
