package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/examples/demo"
)

// TestEvalRunsASuite: turnlog eval runs the demo's suite (exit 0, a table, JSON and
// JUnit written); a suite over a copy of the demo whose agent's instruction is broken
// fails exactly the cases that need what it no longer does (exit 4), and with the
// first run's JSON, or its id, as its baseline names each regression.
func TestEvalRunsASuite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "eval.db")
	base, xml := filepath.Join(dir, "base.json"), filepath.Join(dir, "junit.xml")
	out, stderr, err := runCLI(t, "eval", "--db", db, "--synchronous", "OFF", "--runs", "1", "--json", base, "--junit", xml, filepath.Join("examples", "demo", "eval.yaml"))
	if err != nil || !strings.Contains(out, "order status      1/1 ok") || !strings.Contains(out, "suite demo passed") {
		t.Fatalf("the demo suite: %v\n%s%s", err, out, stderr)
	}
	var rep struct {
		Passed bool
		Cases  []struct{ Name string }
	}
	if raw, err := os.ReadFile(base); err != nil || json.Unmarshal(raw, &rep) != nil || !rep.Passed || len(rep.Cases) != 7 {
		t.Fatalf("the JSON report: %v", err)
	}
	if raw, err := os.ReadFile(xml); err != nil || !strings.Contains(string(raw), `tests="7" failures="0" errors="0"`) {
		t.Fatalf("the JUnit report: %v\n%s", err, raw)
	}
	// The support agent's instruction broken: told to answer from what it knows, it
	// looks no order up — the cases that need a lookup fail, the others pass.
	broken := strings.Replace(string(demo.Config), "instructions: You help customers with their orders. Use the tools; never guess an order's status.",
		"instructions: You help customers with their orders. Answer from what you know.", 1)
	if broken == string(demo.Config) {
		t.Fatal("the demo's support instructions moved: update this test")
	}
	suite, _ := os.ReadFile(filepath.Join("examples", "demo", "eval.yaml"))
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(broken), 0o644)
	os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte("config: broken.yaml\n"+string(suite)), 0o644)
	out, stderr, err = runCLI(t, "eval", "--db", db, "--synchronous", "OFF", "--runs", "1", "--baseline", base, filepath.Join(dir, "suite.yaml"))
	if ExitCode(err) != 4 || !strings.Contains(out, "suite demo FAILED") {
		t.Fatalf("the broken suite: exit %d\n%s%s", ExitCode(err), out, stderr)
	}
	for _, c := range []string{"order status", "refund question", "unknown order", "two turns"} {
		if !strings.Contains(out, fmt.Sprintf("%-18s0/1 FAIL", c)) || !strings.Contains(stderr, "regression: "+c+": pass rate 100% → 0%") {
			t.Errorf("case %s did not fail, or is no regression:\n%s%s", c, out, stderr)
		}
	}
	for _, c := range []string{"refund approved", "refund refused", "keys stay secret"} {
		if !strings.Contains(out, fmt.Sprintf("%-18s1/1 ok", c)) || strings.Contains(stderr, "regression: "+c) {
			t.Errorf("case %s, which needs no lookup, failed:\n%s%s", c, out, stderr)
		}
	}
	// The baseline by its run's id: the log keeps every run.
	var first struct {
		RunID string `json:"run_id"`
	}
	raw, _ := os.ReadFile(base)
	json.Unmarshal(raw, &first)
	out, stderr, err = runCLI(t, "eval", "--db", db, "--synchronous", "OFF", "--runs", "1", "--baseline", first.RunID, filepath.Join(dir, "suite.yaml"))
	if ExitCode(err) != 4 || !strings.Contains(stderr, "regression: order status: pass rate 100% → 0% (baseline run "+first.RunID+")") {
		t.Fatalf("the broken suite against run %s: exit %d\n%s%s", first.RunID, ExitCode(err), out, stderr)
	}
	if _, _, err := runCLI(t, "eval", "--db", db, "--baseline", "no-such-run", filepath.Join("examples", "demo", "eval.yaml")); err == nil || !strings.Contains(err.Error(), "baseline") {
		t.Fatalf("a baseline that is no run: %v", err)
	}
}

// TestEvalRecordsAndReplaysASuite: --record writes the run's recording; --replay
// checks it again under a suite whose judged rubric changed: the case needs a judge
// (exit 4, said on stderr) until --allow-judge, which judges it again; a suite whose
// approvals changed, --runs with --replay and --allow-judge without it are refused.
func TestEvalRecordsAndReplaysASuite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, rec := filepath.Join(dir, "eval.db"), filepath.Join(dir, "recording.json")
	suite := filepath.Join("examples", "demo", "eval.yaml")
	if out, stderr, err := runCLI(t, "eval", "--db", db, "--synchronous", "OFF", "--record", rec, suite); err != nil {
		t.Fatalf("the recorded run: %v\n%s%s", err, out, stderr)
	}
	raw, _ := os.ReadFile(suite)
	changed := strings.Replace(string(raw), "and guesses nothing.", "and names no refund.", 1)
	os.WriteFile(filepath.Join(dir, "changed.yaml"), []byte(changed), 0o600)
	out, stderr, err := runCLI(t, "eval", "--db", db, "--synchronous", "OFF", "--replay", rec, filepath.Join(dir, "changed.yaml"))
	if ExitCode(err) != 4 || !strings.Contains(out, "order status      0/2 NEEDS_JUDGE") || !strings.Contains(stderr, "needs_judge: order status") {
		t.Fatalf("a changed rubric replayed: exit %d\n%s%s", ExitCode(err), out, stderr)
	}
	out, stderr, err = runCLI(t, "eval", "--db", db, "--synchronous", "OFF", "--replay", rec, "--allow-judge", filepath.Join(dir, "changed.yaml"))
	if err != nil || !strings.Contains(out, "order status      2/2 ok") {
		t.Fatalf("a changed rubric judged: exit %d\n%s%s", ExitCode(err), out, stderr)
	}
	// A replay checks what ran: other approvals, or another number of runs, are refused.
	os.WriteFile(filepath.Join(dir, "refused.yaml"), []byte(strings.Replace(string(raw), `answer: "yes"`, `answer: "no"`, 1)), 0o600)
	if _, _, err := runCLI(t, "eval", "--db", db, "--replay", rec, filepath.Join(dir, "refused.yaml")); err == nil ||
		!strings.Contains(err.Error(), `cases[3].approve: case "refund approved" gave other approvals in the recording`) {
		t.Fatalf("other approvals replayed: %v", err)
	}
	if _, _, err := runCLI(t, "eval", "--db", db, "--replay", rec, "--runs", "5", suite); err == nil || !strings.Contains(err.Error(), "runs") {
		t.Fatalf("--runs with --replay: %v", err)
	}
	if _, _, err := runCLI(t, "eval", "--db", db, "--allow-judge", suite); err == nil || !strings.Contains(err.Error(), "allow-judge") {
		t.Fatalf("--allow-judge without --replay: %v", err)
	}
}
