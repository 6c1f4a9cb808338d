package systemtest

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHandoffSurvivesAProcessRestart: turn 1 runs in one process and ends with billing
// (triage handed off); turn 2 runs in a new process on the same file and starts with
// billing — its first model call is billing's.
func TestHandoffSurvivesAProcessRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "turnlog.db")
	run := func(args ...string) string {
		t.Helper()
		full := append([]string{"run", "--app", "shop", "--config", "fixtures/handoff/agent.yaml", "--db", db}, args...)
		cmd := exec.Command(os.Args[0], full...)
		cmd.Env = append(os.Environ(), childEnv+"=1", "CRASH_DIR="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("turnlog %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("I was charged twice for order 42")
	m := regexp.MustCompile(`session (\S+)`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "Billing: order 42") {
		t.Fatalf("turn 1: %s", out)
	}
	if out := run("--session", m[1], "and order 7?"); !strings.Contains(out, "Billing: order 7") {
		t.Fatalf("turn 2: %s", out)
	}
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(`SELECT t.agents, (SELECT e.path FROM events e WHERE e.session_id = t.session_id AND e.turn_id = t.turn_id
		AND e.type = 'ModelCalled' ORDER BY e.seq LIMIT 1) FROM turns t WHERE t.session_id = ? ORDER BY t.start_seq`, m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var agents, first string
		rows.Scan(&agents, &first)
		got = append(got, agents+" "+first)
	}
	if want := `["triage","billing"] triage/model/1|["billing"] billing/model/1`; strings.Join(got, "|") != want {
		t.Fatalf("turns: %s\nwant   %s", strings.Join(got, "|"), want)
	}
}
