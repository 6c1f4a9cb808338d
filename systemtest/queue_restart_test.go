package systemtest

import (
	"database/sql"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQueueSurvivesASIGKILL: while a real turnlog runs a turn (its tool held by a
// gate), two inputs are queued behind it; the process is SIGKILLed. The next start on
// the same file recovers the running turn and then runs the queued inputs, in
// arrival order, as the turns they were promised.
func TestQueueSurvivesASIGKILL(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	b.gate(t, "counted_read", true)
	cmd, base := b.serveChild(t)
	session := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(callServer(t, "POST", base+"/v1/sessions", `{"app":"crash"}`))[1]
	turns := base + "/v1/sessions/" + session + "/turns"
	if out := callServer(t, "POST", turns, `{"input":"read it","background":true}`); !strings.Contains(out, `"status":"running"`) {
		t.Fatalf("background: %s", out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(b.count("counted_read")) == 0 { // the tool runs, held by its gate
		if time.Now().After(deadline) {
			t.Fatal("the tool never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var queued []string
	for _, input := range []string{"first after", "second after"} {
		out := callServer(t, "POST", turns, `{"input":"`+input+`","on_busy":"enqueue"}`)
		m := regexp.MustCompile(`"turn_id":"([^"]+)"`).FindStringSubmatch(out)
		if m == nil || !strings.Contains(out, `"status":"queued"`) {
			t.Fatalf("enqueue %s: %s", input, out)
		}
		queued = append(queued, m[1])
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	b.gate(t, "counted_read", false)

	cmd, base = b.serveChild(t)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	last := callServer(t, "GET", base+"/v1/sessions/"+session+"/turns/"+queued[1]+"?wait=30s", "")
	if !strings.Contains(last, `"status":"completed"`) {
		t.Fatalf("the second queued turn after the restart: %s", last)
	}
	db, err := sql.Open("sqlite", "file:"+b.db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT turn_id, input, status FROM turns WHERE session_id = ? ORDER BY start_seq`, session)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var turn, input, status string
		rows.Scan(&turn, &input, &status)
		if input != "read it" && turn != queued[len(got)-1] {
			t.Errorf("%q ran as turn %s, not the one it was promised", input, turn)
		}
		got = append(got, input+":"+status)
	}
	if strings.Join(got, ", ") != "read it:completed, first after:completed, second after:completed" {
		t.Fatalf("turns after the restart: %v", got)
	}
}
