package systemtest

import (
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// heldTurn starts a real turnlog (stopping on SIGTERM as it does), starts a turn in
// the background whose tool (counted_write, not idempotent) is held running, and
// returns the child, its base URL, and the session and turn resource.
func heldTurn(t *testing.T, b crashBundle, grace string) (cmdWait func() error, base, session, turnURL string) {
	t.Helper()
	hold := filepath.Join(b.dir, "hold-counted_write")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, base := serveChildOn(t, b.db, b.cfg, b.dir, "--shutdown-grace", grace)
	session = regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(callServer(t, "POST", base+"/v1/sessions", `{"app":"crash"}`))[1]
	accepted := callServer(t, "POST", base+"/v1/sessions/"+session+"/turns", `{"input":"write it","background":true}`)
	loc := regexp.MustCompile(`"location":"([^"]+)"`).FindStringSubmatch(accepted)
	if loc == nil {
		t.Fatalf("background: %s", accepted)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(b.count("counted_write")) == 0 { // the tool runs, held
		if time.Now().After(deadline) {
			t.Fatal("the tool never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return cmd.Wait, base, session, loc[1]
}

// turnRow reads a turn's status and error message with plain SQL.
func turnRow(t *testing.T, db, session string) (status, message string) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var msg sql.NullString
	if err := conn.QueryRow(`SELECT status, error_message FROM proj_turns WHERE session_id = ?`, session).Scan(&status, &msg); err != nil {
		t.Fatal(err)
	}
	return status, msg.String
}

// TestSIGTERMLetsARunningToolFinish: SIGTERM during a slow tool that is not
// idempotent: new turns are refused (503 shutting_down, /readyz 503) while it runs;
// it finishes within the grace period, the turn commits, and the process exits
// cleanly. After a restart the turn is committed — not tool_outcome_unknown — and the
// tool ran once.
func TestSIGTERMLetsARunningToolFinish(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	wait, base, session, turnURL := heldTurn(t, b, "60s")
	other := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(callServer(t, "POST", base+"/v1/sessions", `{"app":"crash"}`))[1]
	deadline := time.Now().Add(30 * time.Second)
	for { // SIGTERM is handled apart from this: ask until the server says it stops
		refused := callServer(t, "POST", base+"/v1/sessions/"+other+"/turns", `{"input":"hello"}`)
		if strings.Contains(refused, `"code":"shutting_down"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new turn while stopping: %s", refused)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ready := callServer(t, "GET", base+"/readyz", ""); !strings.Contains(ready, "shutting down") {
		t.Fatalf("readyz while stopping: %s", ready)
	}
	if err := os.Remove(filepath.Join(b.dir, "hold-counted_write")); err != nil { // the tool finishes
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("the server did not exit cleanly: %v", err)
	}
	if status, msg := turnRow(t, b.db, session); status != "completed" {
		t.Fatalf("after SIGTERM the turn is %s (%s)", status, msg)
	}
	cmd, base2 := serveChildOn(t, b.db, b.cfg, b.dir)
	defer func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }()
	if turn := callServer(t, "GET", base2+turnURL+"?wait=30s", ""); !strings.Contains(turn, `"status":"completed"`) || !strings.Contains(turn, "write done") {
		t.Fatalf("after the restart: %s", turn)
	}
	if n := len(b.count("counted_write")); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// TestSIGTERMCancelsWhatOutlastsTheGrace: a tool still running when the grace period
// ends is stopped (its context ends), and its turn is canceled with the reason
// "shutdown"; the next start leaves it canceled and runs nothing again.
func TestSIGTERMCancelsWhatOutlastsTheGrace(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	wait, _, session, _ := heldTurn(t, b, "1s")
	if err := wait(); err != nil {
		t.Fatalf("the server did not exit cleanly: %v", err)
	}
	if status, msg := turnRow(t, b.db, session); status != "canceled" || msg != "shutdown" {
		t.Fatalf("after the grace period the turn is %s (%s)", status, msg)
	}
	cmd, _ := serveChildOn(t, b.db, b.cfg, b.dir)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if status, _ := turnRow(t, b.db, session); status != "canceled" || len(b.count("counted_write")) != 1 {
		t.Fatalf("after a restart the turn is %s, and the tool ran %d times", status, len(b.count("counted_write")))
	}
}
